/* bnxt_re oracle: the fake kernel's state the harness reads. Own code. */
#ifndef BNXT_ORACLE_SHIM_H
#define BNXT_ORACLE_SHIM_H
#include <stdint.h>
#include <stddef.h>

struct shim_obj { uint64_t va, va2, handle; uint32_t id; };   /* CQ/QP/SRQ as CREATE_* named them */
struct shim_anon { void *addr; size_t len; };                 /* every anonymous mmap (queue buffers) */

struct shim_state {
	int fake_fd;
	void *shpg, *dpi;              /* the shared page (offset 0) and the doorbell page (offset DBR) */
	struct shim_obj cq[8]; int ncq;
	struct shim_obj qp[16]; int nqp;
	struct shim_obj srq[4]; int nsrq;
	struct shim_anon anon[256]; int nanon;
	uint64_t db[4096]; int ndb;     /* doorbell stores, in order */
	uint32_t next_avid;
};
struct shim_state *shim_state(void);
/* the length of the anonymous mapping that starts at addr (0: none) */
size_t shim_anon_len(const void *addr);
void shim_log(const char *fmt, ...);
/* GET_CONTEXT's answer, from the environment: SHIM_CHIP (chip_id0, default 0x16d7: not gen P5),
 * SHIM_MODE (unset: no HAVE_MODE; "variable" / "static": HAVE_MODE with that mode) */
#define SHIM_PG 4096
#define SHIM_DBR 0x5000ULL
#define SHIM_MAX_CQD 65535
#endif
