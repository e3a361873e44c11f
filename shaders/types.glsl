// types.glsl - storage types of tensor bindings, chosen per variant with
// -DA_TYPE / -DB_TYPE / -DC_TYPE / -DD_TYPE = 0 (f32), 1 (f16), 2 (bf16), 3 (i32).
// 16-bit values are only loaded, stored and converted (storageBuffer16BitAccess).
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_control_flow_attributes : enable

// Block formats (QTYPE, quant.glsl) are read as 16-bit words; MXFP4 (QTYPE 39), whose
// 17-byte blocks start on odd bytes too, as bytes (storageBuffer8BitAccess).
#if defined(QTYPE) && QTYPE == 39
#extension GL_EXT_shader_8bit_storage : require
#define QUNIT_T uint8_t
#else
#define QUNIT_T uint16_t
#endif

#define STORAGE_T_0 float
#define STORAGE_T_1 float16_t
#define STORAGE_T_2 uint16_t
#define STORAGE_T_3 int
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define STORAGE_T(code) CAT(STORAGE_T_, code)

// 16-bit values cannot be function arguments without arithmetic-type
// extensions, so conversions are macros: TO_F32(code, stored value).
#define TO_F32_0(x) (x)
#define TO_F32_1(x) float(x)
#define TO_F32_2(x) uintBitsToFloat(uint(x) << 16)
#define TO_F32_3(x) float(x)
#define TO_F32(code, x) CAT(TO_F32_, code)(x)

// round to nearest even; NaN stays a quiet NaN
uint f32_to_bf16(float v) {
    uint u = floatBitsToUint(v);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 64u;
    return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

#define FROM_F32_0(v) (v)
#define FROM_F32_1(v) float16_t(v)
#define FROM_F32_2(v) uint16_t(f32_to_bf16(v))
#define FROM_F32_3(v) int(v)
#define FROM_F32(code, v) CAT(FROM_F32_, code)(v)

// Linear invocation index over a 2D grid of 1D workgroups (see vk_groups_1d).
uint linear_id(uint group_size) {
    return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * group_size + gl_LocalInvocationID.x;
}
