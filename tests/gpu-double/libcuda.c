/* A TEST DOUBLE of the CUDA driver library, NOT A GPU.
 *
 * Built as libcuda.so.1 (build.sh) and put on LD_LIBRARY_PATH, it lets rperftest's GPU flavour
 * run its GPU-memory plumbing end to end where there is no GPU (the VM bed): the loader, the
 * device listing, the allocation, the registration paths, the teardown. Its "device memory" is
 * ordinary host memory (a memfd mapped shared), so an RDMA device registers it like any host
 * buffer; nothing here measures or proves anything about a GPU, GPUDirect RDMA or a GPU driver.
 *
 * The host memory and the dma-buf export are hostmem.h's, shared with the HSA double (libhsa.c).
 * dma-buf: cuMemGetHandleForAddressRange exports the range through /dev/udmabuf where the
 * kernel has it (CONFIG_UDMABUF), which is a real dma-buf of host pages. Without udmabuf the
 * device reports no dma-buf support, unless GPU_DOUBLE_DMABUF=memfd: then it hands out a dup of
 * the memfd, which is NOT a dma-buf, so that a test can check how the kernel's dma-buf MR method
 * refuses it (a device without dma-buf MRs, such as rxe, says EOPNOTSUPP before it looks at the fd).
 *
 * Environment: GPU_DOUBLE_DEVICES (number of devices, default 1), GPU_DOUBLE_DMABUF=memfd.
 * Only the entry points rperftest's loader resolves are here (bench/perftest/src/gpu/cuda.rs).
 * Own code, written from the CUDA driver API's documented signatures and <linux/udmabuf.h>. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hostmem.h"

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_INVALID_DEVICE 101
#define CUDA_ERROR_NOT_SUPPORTED 801

static int initialized;
static int contexts[16];
#define ndev double_ndev

CUresult cuInit(unsigned flags) { (void)flags; initialized = 1; return CUDA_SUCCESS; }
CUresult cuDeviceGetCount(int *n) { if (!initialized) return CUDA_ERROR_NOT_INITIALIZED; *n = ndev(); return CUDA_SUCCESS; }
CUresult cuDeviceGet(CUdevice *d, int i) { if (i < 0 || i >= ndev()) return CUDA_ERROR_INVALID_DEVICE; *d = i; return CUDA_SUCCESS; }

/* Attributes: 18 INTEGRATED, 33 PCI_BUS_ID, 34 PCI_DEVICE_ID, 50 PCI_DOMAIN_ID, 124 DMA_BUF_SUPPORTED. */
CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d)
{
	if (d < 0 || d >= ndev()) return CUDA_ERROR_INVALID_DEVICE;
	switch (attr) {
	case 18: *v = 0; break;
	case 33: *v = 0xd0 + d; break; /* a made-up bus: there is no PCI device behind it */
	case 34: *v = 0; break;
	case 50: *v = 0; break;
	case 124: *v = double_udmabuf_ok() || double_memfd_mode(); break;
	default: *v = 0;
	}
	return CUDA_SUCCESS;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
	if (d < 0 || d >= ndev()) return CUDA_ERROR_INVALID_DEVICE;
	snprintf(name, len, "rperftest GPU test double %d (host memory, not a GPU)", d);
	return CUDA_SUCCESS;
}
/* "0000:d0:00.0" (or "d0:00.0") names device 0, d1 device 1, ... */
CUresult cuDeviceGetByPCIBusId(CUdevice *d, const char *bus)
{
	unsigned dom = 0, b = 0, dev = 0, fn = 0;
	if (sscanf(bus, "%x:%x:%x.%x", &dom, &b, &dev, &fn) != 4) {
		dom = 0;
		if (sscanf(bus, "%x:%x.%x", &b, &dev, &fn) != 3) return CUDA_ERROR_INVALID_VALUE;
	}
	if (dom != 0 || dev != 0 || fn != 0 || b < 0xd0 || (int)(b - 0xd0) >= ndev()) return CUDA_ERROR_INVALID_DEVICE;
	*d = (int)(b - 0xd0);
	return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
	if (d < 0 || d >= ndev()) return CUDA_ERROR_INVALID_DEVICE;
	contexts[d]++;
	*c = &contexts[d];
	return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { if (d >= 0 && d < 16 && contexts[d]) contexts[d]--; return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(CUcontext c) { (void)c; return CUDA_SUCCESS; }
CUresult cuCtxSynchronize(void) { return CUDA_SUCCESS; }

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t len)
{
	uintptr_t base = double_alloc(len);
	if (!base) return CUDA_ERROR_OUT_OF_MEMORY;
	*p = (CUdeviceptr)base;
	return CUDA_SUCCESS;
}
CUresult cuMemFree_v2(CUdeviceptr p) { return double_free((uintptr_t)p) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
CUresult cuMemsetD8_v2(CUdeviceptr p, unsigned char v, size_t n)
{
	if (!double_find(p, n)) return CUDA_ERROR_INVALID_VALUE;
	memset((void *)(uintptr_t)p, v, n);
	return CUDA_SUCCESS;
}
/* handleType 1 = CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD: writes an int fd */
CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr p, size_t len, int type, unsigned long long flags)
{
	const struct double_alloc *a = double_find(p, len);
	if (!a || type != 1 || flags != 0) return CUDA_ERROR_INVALID_VALUE;
	int fd = double_export(a, p - a->base, len);
	if (fd < 0) return CUDA_ERROR_NOT_SUPPORTED;
	*(int *)handle = fd;
	return CUDA_SUCCESS;
}
