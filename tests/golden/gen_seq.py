"""Golden data for tests/test-ops-seq.c: ssm_conv, ssm_scan (Mamba-1 and -2),
rwkv_wkv6, gated_linear_attn, rwkv_wkv7 (explicit PyTorch reference loops) and
solve_tri (torch.linalg.solve_triangular).

Run: OPENBLAS_NUM_THREADS=2 /usr/bin/python3 tests/golden/gen_seq.py
Tensors are in torch order (the last torch dim is ggml's ne[0]).
"""
import os

import torch
import torch.nn.functional as F

from goldfile import write_gold

torch.manual_seed(4321)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seq.gold")
g = {}

# ssm_conv: sx [d_conv-1+n_t, d_inner, n_s] (torch (n_s, d_inner, L)), c [d_conv, d_inner]
d_conv, n_t, d_inner, n_s = 4, 5, 6, 2
sx = torch.randn(n_s, d_inner, d_conv - 1 + n_t)
c = torch.randn(d_inner, d_conv)
y = torch.stack([torch.stack([(sx[:, :, t:t + d_conv] * c).sum(-1) for t in range(n_t)], 1)], 0)[0]  # (n_s, n_t, d_inner)
g["ssm_conv.sx"], g["ssm_conv.c"], g["ssm_conv.out"] = sx, c, y


def ssm_scan(s, x, dt, A, B, C, ids):
    """s (n_rs, n_head, head_dim, d_state); x (n_seqs, n_tok, n_head, head_dim); dt (n_seqs, n_tok, n_head);
    A (n_head, d_state or 1); B, C (n_seqs, n_tok, n_group, d_state); returns y, the final states
    and every sequence's state after each token (n_tok, n_seqs, ...)."""
    n_seqs, n_tok, n_head, head_dim = x.shape
    n_group = B.shape[2]
    y = torch.zeros_like(x, dtype=torch.float64)
    states, history = [], []
    for q in range(n_seqs):
        history.append([])
        st = s[ids[q]].double().clone()
        for t in range(n_tok):
            for h in range(n_head):
                grp = h // (n_head // n_group)
                d = F.softplus(dt[q, t, h].double())
                decay = torch.exp(d * A[h].double())  # (d_state,) or (1,)
                st[h] = st[h] * decay + B[q, t, grp].double() * (x[q, t, h].double() * d)[:, None]
                y[q, t, h] = st[h] @ C[q, t, grp].double()
            history[q].append(st.clone())
        states.append(st)
    per_token = torch.stack([torch.stack([history[q][t] for q in range(n_seqs)]) for t in range(n_tok)])
    return y.float(), torch.stack(states).float(), per_token.float()


for name, a_state, head_dim, n_head, n_group in (("mamba2", False, 3, 4, 2), ("mamba1", True, 1, 6, 1)):
    d_state, n_tok, n_seqs, n_rs = 5, 3, 2, 3
    s = torch.randn(n_rs, n_head, head_dim, d_state)
    x = torch.randn(n_seqs, n_tok, n_head, head_dim)
    dt = torch.randn(n_seqs, n_tok, n_head) * 2
    dt[0, 0, 0] = 25.0  # above softplus' cut-off
    A = -torch.rand(n_head, d_state if a_state else 1) * 2
    B = torch.randn(n_seqs, n_tok, n_group, d_state)
    C = torch.randn(n_seqs, n_tok, n_group, d_state)
    ids = torch.tensor([2, 0], dtype=torch.int32)
    y, st, per_token = ssm_scan(s, x, dt, A, B, C, ids)
    p = "ssm_scan_" + name + "."
    g.update({p + "s": s, p + "x": x, p + "dt": dt, p + "A": A, p + "B": B, p + "C": C, p + "ids": ids,
              p + "out": torch.cat([y.flatten(), st.flatten()])})
    if not a_state:
        # K = n_tok rollback slots: slot k holds the states after token n_tok - 1 - k
        slots = [per_token[n_tok - 1 - k].flatten() for k in range(n_tok)]
        g[p + "out_slots"] = torch.cat([y.flatten()] + slots)


def recurrence(kind, T, H, S, n_seqs, ops, state, scale=1.0):
    """Per head state (S, S), rows = key channel i for wkv6/gla, value channel i for wkv7."""
    out = torch.zeros(T, H, S, dtype=torch.float64)
    st_all = state.double().reshape(n_seqs, H, S, S).clone()
    per = T // n_seqs
    for q in range(n_seqs):
        for h in range(H):
            st = st_all[q, h]
            for t in range(q * per, (q + 1) * per):
                o = {k: v[t, h].double() for k, v in ops.items() if v.dim() == 3}
                if kind == "wkv6":
                    kv = torch.outer(o["k"], o["v"])
                    out[t, h] = o["r"] @ (ops["tf"][h].double()[:, None] * kv + st)
                    st = st * o["td"][:, None] + kv
                elif kind == "gla":
                    st = st * o["g"][:, None] + torch.outer(o["k"], o["v"])
                    out[t, h] = (o["q"] * scale) @ st
                else:
                    sa = st @ o["a"]
                    st = st * o["w"][None, :] + torch.outer(o["v"], o["k"]) + torch.outer(sa, o["b"])
                    out[t, h] = st @ o["r"]
            st_all[q, h] = st
    return torch.cat([out.reshape(T, H * S), st_all.reshape(n_seqs * S, H * S)]).float()


T, H, S, n_seqs = 6, 3, 4, 2
state = torch.randn(n_seqs, S * S * H)
ops6 = {"k": torch.randn(T, H, S), "v": torch.randn(T, H, S), "r": torch.randn(T, H, S),
        "tf": torch.randn(H, S), "td": torch.rand(T, H, S)}
g.update({"wkv6." + k: v for k, v in ops6.items()})
g["wkv6.state"], g["wkv6.out"] = state, recurrence("wkv6", T, H, S, n_seqs, ops6, state)
opsg = {"k": torch.randn(T, H, S), "v": torch.randn(T, H, S), "q": torch.randn(T, H, S), "g": torch.rand(T, H, S)}
g.update({"gla." + k: v for k, v in opsg.items()})
g["gla.state"], g["gla.out"] = state, recurrence("gla", T, H, S, n_seqs, opsg, state, scale=0.5)
kk = F.normalize(torch.randn(T, H, S), dim=-1)
ops7 = {"r": torch.randn(T, H, S), "w": torch.exp(-torch.exp(torch.randn(T, H, S) * 0.5 - 1)), "k": torch.randn(T, H, S),
        "v": torch.randn(T, H, S), "a": -kk, "b": kk * torch.rand(T, H, S)}
g.update({"wkv7." + k: v for k, v in ops7.items()})
g["wkv7.state"], g["wkv7.out"] = state, recurrence("wkv7", T, H, S, n_seqs, ops7, state)

# solve_tri: A (2, 1, n, n) with a dominant diagonal, B with n rows (left) or n columns (right)
n, k = 6, 3
A = torch.randn(1, 2, n, n) * 0.5 + torch.diag_embed(torch.rand(1, 2, n) + 1.5)
Bl, Br = torch.randn(1, 2, n, k), torch.randn(1, 2, k, n)
g["solve_tri.A"], g["solve_tri.B_left"], g["solve_tri.B_right"] = A, Bl, Br
for left in (True, False):
    for lower in (True, False):
        for uni in (False, True):
            tri = torch.tril(A) if lower else torch.triu(A)
            X = torch.linalg.solve_triangular(tri.double(), (Bl if left else Br).double(), upper=not lower, left=left,
                                              unitriangular=uni)
            g["solve_tri.%s_%s_%s" % ("left" if left else "right", "lower" if lower else "upper", "uni" if uni else "diag")] = X.float()

write_gold(OUT, g)
print("wrote", OUT)
