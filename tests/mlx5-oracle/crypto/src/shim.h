/* mlx5 crypto oracle shim: fake mlx5 uverbs kernel side (write path + DEVX ioctls), in user space. Own code. */
#ifndef MLX5_ORACLE_SHIM_H
#define MLX5_ORACLE_SHIM_H
#include <stdint.h>
#include <stddef.h>

struct shim_cq { uint64_t buf_addr, db_addr; uint32_t cqe_size, ncqe, cqn, handle; uint16_t flags; };
struct shim_qp { uint64_t buf_addr, db_addr; uint32_t sq_wqe_count, rq_wqe_count, rq_wqe_shift, flags, uidx, bfreg_index_req, qpn, handle, resp_bfreg_index; uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline; uint8_t sq_sig_all, qp_type; };
struct shim_uar { void *addr; size_t len; uint64_t offset; uint32_t cmd, index; };
struct shim_write_ev { uint64_t uar_off; /* offset from UAR page base */ uint32_t uar_page; uint32_t len; uint8_t bytes[64]; uint64_t fault_addr; };

struct shim_state {
	int fake_fd;
	struct shim_cq cq[8]; int ncq;
	struct shim_qp qp[8]; int nqp;
	struct shim_uar uar[64]; int nuar;
	struct shim_write_ev ev[4096]; int nev;
	int trap_enabled;
	int devx; /* GET_CONTEXT asked for (and got) a DEVX context */
	uint32_t last_modify_qp_mask; uint8_t last_modify_state;
	char log_path[256];
};
struct shim_state *shim_state(void);
void shim_trap_enable(int on);      /* protect UAR pages; record every store */
void shim_uar_fill(uint8_t v);      /* fill all UAR pages with sentinel */
void shim_ev_reset(void);
void shim_log(const char *fmt, ...);
/* devx.c: answer an RDMA_VERBS_IOCTL on the fake fd; returns 0, -errno, or -ENOTTY
 * when the ioctl is not a DEVX one (the caller then answers ENOTTY as before) */
int shim_devx_ioctl(unsigned long req, void *arg);
void shim_devx_label(const char *label); /* tag the following DEVX records */
#endif
