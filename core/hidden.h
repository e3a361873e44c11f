/* hidden.h - GGMLC_HIDDEN: the mark of a symbol shared by the library's own files and never
 * exported from libggmlc.so. */
#ifndef GGMLC_HIDDEN_H
#define GGMLC_HIDDEN_H

#define GGMLC_HIDDEN __attribute__((visibility("hidden")))

#endif /* GGMLC_HIDDEN_H */
