/* The few ISA-L calls the WARC writer makes, behind functions that need no struct layout on
 * the Rust side (src/store/archive/warc/isal.rs): built with the system's ISA-L headers when
 * build.rs finds them (Debian's libisal-dev), so the default build gets ISA-L's deflate
 * without nasm or the autotools. */
#include <stdint.h>
#include <stdlib.h>
#include <isa-l/igzip_lib.h>

void *spinneret_isal_new(void) { return calloc(1, sizeof(struct isal_zstream)); }

void spinneret_isal_free(void *stream) { free(stream); }

/* Compresses `in` without history into byte-aligned deflate blocks that are not final, into
 * `out` (room for `cap` bytes), with ISA-L's default code or, if `fixed`, deflate's fixed
 * code. Returns the bytes written; -1 when they would not fit in `cap`; -2 on another
 * error (the ISA-L code is in `*code`). */
long spinneret_isal_chunk(void *stream, const uint8_t *in, uint32_t len, uint8_t *out,
                          uint32_t cap, int fixed, int *code) {
    struct isal_zstream *s = stream;
    isal_deflate_stateless_init(s);
    s->level = 0;
    s->level_buf = NULL;
    s->level_buf_size = 0;
    s->gzip_flag = IGZIP_DEFLATE;
    s->end_of_stream = 0;
    s->flush = FULL_FLUSH;
    int rc = isal_deflate_set_hufftables(
        s, NULL, fixed ? IGZIP_HUFFTABLE_STATIC : IGZIP_HUFFTABLE_DEFAULT);
    if (rc != COMP_OK) {
        *code = rc;
        return -2;
    }
    s->next_in = (uint8_t *)in;
    s->avail_in = len;
    s->next_out = out;
    s->avail_out = cap;
    rc = isal_deflate_stateless(s);
    long written = (long)(cap - s->avail_out);
    s->next_in = NULL;
    s->next_out = NULL;
    s->avail_in = 0;
    s->avail_out = 0;
    if (rc == COMP_OK && (uint32_t)written < cap)
        return written;
    if (rc == COMP_OK || rc == STATELESS_OVERFLOW)
        return -1;
    *code = rc;
    return -2;
}
