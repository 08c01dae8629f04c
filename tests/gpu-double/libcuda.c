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
#include <pthread.h>
#include <time.h>
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

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t len)
{
	uintptr_t base = double_alloc(len);
	if (!base) return CUDA_ERROR_OUT_OF_MEMORY;
	*p = (CUdeviceptr)base;
	return CUDA_SUCCESS;
}
CUresult cuMemFree_v2(CUdeviceptr p) { return double_free((uintptr_t)p) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
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

/* cudaMallocManaged's driver call: flags 1 = CU_MEM_ATTACH_GLOBAL. Host memory like the rest. */
CUresult cuMemAllocManaged(CUdeviceptr *p, size_t len, unsigned flags)
{
	if (flags != 1) return CUDA_ERROR_INVALID_VALUE;
	return cuMemAlloc_v2(p, len);
}

/* --gpu_touch: the double takes rperftest's PTX image (it compiles nothing: it checks that the
 * image declares the kernel with its four parameters) and a launch runs what that kernel is
 * written to do on a host thread: a zero byte every 4096 bytes of the buffer, once, or until the
 * int at the stop pointer is non-zero (bounded to 60 s, then cuCtxSynchronize fails, so a broken
 * stop cannot hang a test). Kernel: (u8 *buf, int size, int *stop, int infinite), grid 1, block 1. */
#define TOUCH_ENTRY "rperftest_touch_pages"
#define CUDA_ERROR_INVALID_IMAGE 200
#define CUDA_ERROR_NOT_FOUND 500
#define CUDA_ERROR_UNKNOWN 999
static struct module { int loaded, has_touch; } modules[4];
struct touch_job { uintptr_t buf; int size; uintptr_t stop; int infinite, timed_out; };
/* One kernel at a time; the lock keeps two threads from joining the same kernel. */
static pthread_mutex_t touch_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t touch_thread;
static struct touch_job *touch_job;

CUresult cuModuleLoadData(void **m, const void *image)
{
	const char *ptx = image, *e;
	if (!m || !ptx || strncmp(ptx, ".version ", 9) || !strstr(ptx, "\n.target sm_")) return CUDA_ERROR_INVALID_IMAGE;
	for (int i = 0; i < 4; i++)
		if (!modules[i].loaded) {
			modules[i].loaded = 1;
			e = strstr(ptx, ".entry " TOUCH_ENTRY "(");
			/* four parameters before the body */
			int params = 0;
			for (const char *q = e; e && (q = strstr(q, ".param ")) && q < strchr(e, '{'); q++) params++;
			modules[i].has_touch = e && params == 4;
			*m = &modules[i];
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuModuleUnload(void *m)
{
	struct module *mod = m;
	if (!mod || !mod->loaded) return CUDA_ERROR_INVALID_VALUE;
	mod->loaded = 0;
	return CUDA_SUCCESS;
}
CUresult cuModuleGetFunction(void **f, void *m, const char *name)
{
	struct module *mod = m;
	if (!mod || !mod->loaded || !f || !name) return CUDA_ERROR_INVALID_VALUE;
	if (strcmp(name, TOUCH_ENTRY) || !mod->has_touch) return CUDA_ERROR_NOT_FOUND;
	*f = mod;
	return CUDA_SUCCESS;
}
static void *touch_pages(void *arg)
{
	struct touch_job *j = arg;
	time_t end = time(NULL) + 60;
	do {
		for (int i = 0; i < j->size; i += 4096) ((volatile uint8_t *)j->buf)[i] = 0;
		if (time(NULL) > end) { j->timed_out = 1; break; }
	} while (j->infinite && !*(volatile int *)j->stop);
	return NULL;
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
			unsigned shmem, void *stream, void **params, void **extra)
{
	struct module *mod = f;
	if (!mod || !mod->loaded || !mod->has_touch || !params || extra || stream || shmem) return CUDA_ERROR_INVALID_VALUE;
	if (gx != 1 || gy != 1 || gz != 1 || bx != 1 || by != 1 || bz != 1) return CUDA_ERROR_INVALID_VALUE;
	struct touch_job j = { *(CUdeviceptr *)params[0], *(int *)params[1], *(CUdeviceptr *)params[2], *(int *)params[3], 0 };
	if (j.size < 0 || !double_find(j.buf, (size_t)j.size) || !double_find(j.stop, sizeof(int))) return CUDA_ERROR_INVALID_VALUE;
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&touch_lock);
	if (touch_job) {
		r = CUDA_ERROR_INVALID_VALUE; /* one kernel at a time in this double */
	} else if (!(touch_job = malloc(sizeof j))) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		*touch_job = j;
		if (pthread_create(&touch_thread, NULL, touch_pages, touch_job)) { free(touch_job); touch_job = NULL; r = CUDA_ERROR_UNKNOWN; }
	}
	pthread_mutex_unlock(&touch_lock);
	return r;
}
CUresult cuCtxSynchronize(void)
{
	pthread_mutex_lock(&touch_lock);
	struct touch_job *j = touch_job;
	pthread_t t = touch_thread;
	touch_job = NULL;
	pthread_mutex_unlock(&touch_lock);
	if (!j) return CUDA_SUCCESS;
	pthread_join(t, NULL);
	int timed_out = j->timed_out;
	free(j);
	return timed_out ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS;
}
