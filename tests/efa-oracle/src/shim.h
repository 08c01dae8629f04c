/* EFA oracle: what the fake kernel (shim.c) tells the harness (harness.c). */
#include <stdint.h>
#include <stddef.h>

struct shim_map { uint64_t key; void *addr; size_t len; };
struct shim_qp { uint32_t qpn, handle; uint64_t llq_key, sq_db_key, rq_key, rq_db_key; uint32_t llq_off, sq_db_off, rq_db_off;
		 uint32_t rq_ring_size, sq_ring_size, driver_qp_type; uint16_t send_sub_cq, recv_sub_cq; };
struct shim_cq { uint32_t handle, cqe, entry_size, num_sub_cqs, cq_idx, db_off; uint64_t key, db_key; };

struct shim_state {
	int fake_fd;
	struct shim_map map[64]; int nmap;
	struct shim_qp qp[8]; int nqp;
	struct shim_cq cq[8]; int ncq;
	uint32_t caps;            /* EFA_QUERY_DEVICE_CAPS_* the fake device reports */
	uint16_t sub_cqs_per_cq;
};
struct shim_state *shim_state(void);
void *shim_map_of(uint64_t key);  /* where the process mapped the fake kernel's mmap key (NULL: never) */
void shim_log(const char *fmt, ...);
