/* dma-buf MR oracle harness: rdma-core's ibv_reg_dmabuf_mr on a fake mlx5 device, with fixed
 * arguments the Rust test repeats (uverbs/tests/golden_cmds.rs, dmabuf_mr_matches_rdma_core).
 * Own code, written from the public verbs API. */
#include <stdio.h>
#include <stdint.h>
#include <infiniband/verbs.h>

int main(void)
{
	int n; struct ibv_device **l = ibv_get_device_list(&n);
	if (!l || !n) { fprintf(stderr, "no device\n"); return 1; }
	struct ibv_context *ctx = ibv_open_device(l[0]);
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	if (!pd) { perror("open/pd"); return 1; }
	/* offset 0x234, length 1 MiB, iova 0x7f0000200000, fd 9, local write + remote write + remote read */
	struct ibv_mr *mr = ibv_reg_dmabuf_mr(pd, 0x234, 1 << 20, 0x7f0000200000ULL, 9,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!mr) { perror("ibv_reg_dmabuf_mr"); return 1; }
	printf("pd handle %u lkey 0x%x rkey 0x%x handle %u\n", pd->handle, mr->lkey, mr->rkey, mr->handle);
	return 0;
}
