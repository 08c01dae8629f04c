/* dma-buf MR oracle: the ioctl half of the fake kernel. Replaces the crypto oracle's devx.c
 * (same two entry points, see ../../mlx5-oracle/crypto/src/shim.h): answers
 * UVERBS_OBJECT_MR / UVERBS_METHOD_REG_DMABUF_MR and writes the request it received, verbatim,
 * to $DMABUF_CAPTURE as hex (header + attributes), one line. Every other ioctl: -ENOTTY, so
 * libibverbs keeps using write() for the core verbs as with the crypto oracle.
 * Own code, written from rdma/ib_user_ioctl_cmds.h and rdma/rdma_user_ioctl_cmds.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <stdint.h>
#include <rdma/rdma_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include "shim.h"

void shim_devx_label(const char *l) { (void)l; }

int shim_devx_ioctl(unsigned long req, void *arg)
{
	struct ib_uverbs_ioctl_hdr *h = arg;
	if (req != RDMA_VERBS_IOCTL || !h) return -ENOTTY;
	if (h->object_id != UVERBS_OBJECT_MR || h->method_id != UVERBS_METHOD_REG_DMABUF_MR) return -ENOTTY;
	const char *path = getenv("DMABUF_CAPTURE");
	FILE *f = fopen(path ? path : "/tmp/dmabuf-capture.hex", "w");
	if (!f) return -EIO;
	const uint8_t *b = arg;
	for (size_t i = 0; i < h->length; i++) fprintf(f, "%02x", b[i]);
	fputc('\n', f);
	fclose(f);
	/* Answer: a handle, lkey and rkey, and VALID_OUTPUT on the outputs (as the kernel does). */
	for (unsigned i = 0; i < h->num_attrs; i++) {
		struct ib_uverbs_attr *a = &h->attrs[i];
		switch (a->attr_id) {
		case UVERBS_ATTR_REG_DMABUF_MR_HANDLE: a->data = 7; break;
		case UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY:
		case UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY: {
			uint32_t key = 0x00abcd42; memcpy((void *)(uintptr_t)a->data, &key, 4);
			a->flags |= UVERBS_ATTR_F_VALID_OUTPUT; break; }
		}
	}
	return 0;
}
