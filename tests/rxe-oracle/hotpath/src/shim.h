/* rxe hot-path shim: a fake rxe uverbs kernel side in user space (write() commands + ring
 * mmaps), for tests/rxe-oracle/hotpath. Own code, written from the uAPI headers. */
#ifndef RXE_HOTPATH_SHIM_H
#define RXE_HOTPATH_SHIM_H
#include <stdint.h>
#include <stddef.h>

/* One ring the fake kernel created: its memory (the rxe_queue_buf header, then the slots) and
 * the mmap cookie it handed out in the create response's struct mminfo. */
struct shim_ring {
	uint8_t *buf;        /* anonymous shared memory, header initialised at create time */
	size_t size;         /* mminfo.size (page aligned) */
	uint64_t offset;     /* mminfo.offset */
	uint32_t log2_elem, slots;
	int mapped;          /* librxe has mmap'd it */
	char what[4];        /* "cq", "sq", "rq" */
};

struct shim_state {
	int fake_fd;
	struct shim_ring ring[16]; int nring;
	struct shim_ring *last_cq, *last_sq, *last_rq;
	uint32_t last_qpn, last_qp_handle, last_cq_handle;
};
struct shim_state *shim_state(void);
#endif
