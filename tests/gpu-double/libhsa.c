/* A TEST DOUBLE of the ROCm HSA runtime (libhsa-runtime64.so.1), NOT A GPU.
 *
 * Built as libhsa-runtime64.so.1 (build.sh) beside the CUDA double, it lets rperftest's GPU
 * flavour run its ROCm plumbing (bench/perftest/src/gpu/rocm.rs) where there is no GPU: the
 * loader, the agent and pool walk, the allocation, the dma-buf export, the registration paths,
 * the teardown. Its "device memory" is ordinary host memory (a memfd mapped shared), so an RDMA
 * device registers it like any host buffer; nothing here proves anything about an AMD GPU,
 * ROCm, amdgpu's peer memory or GPUDirect RDMA.
 *
 * Agents: one CPU agent, then GPU_DOUBLE_DEVICES GPU agents (default 1), each with a fine-grained
 * pool first and the coarse-grained device pool second (so the caller's pool choice is tested).
 * dma-buf: hsa_amd_portable_export_dmabuf exports the range through /dev/udmabuf where the kernel
 * has it, else with GPU_DOUBLE_DMABUF=memfd a dup of the memfd (NOT a dma-buf), else fails.
 * Own code, written from the HSA API's documented signatures (hsa.h, hsa_ext_amd.h). */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hostmem.h"

typedef int hsa_status_t;
typedef struct { uint64_t handle; } hsa_agent_t;
typedef struct { uint64_t handle; } hsa_amd_memory_pool_t;

#define HSA_STATUS_SUCCESS 0
#define HSA_STATUS_INFO_BREAK 0x1
#define HSA_STATUS_ERROR 0x1000
#define HSA_STATUS_ERROR_INVALID_ARGUMENT 0x1001
#define HSA_STATUS_ERROR_INVALID_ALLOCATION 0x1003
#define HSA_STATUS_ERROR_INVALID_AGENT 0x1004
#define HSA_STATUS_ERROR_OUT_OF_RESOURCES 0x1008
#define HSA_STATUS_ERROR_NOT_INITIALIZED 0x100B

/* Handles: agent 1 is the CPU, 2.. the GPUs; pool handle = agent * 16 + index (1 fine, 2 coarse). */
#define CPU_AGENT 1
static int refs;

static int is_gpu(uint64_t h) { return h >= 2 && (int)(h - 2) < double_ndev(); }

hsa_status_t hsa_init(void) { refs++; return HSA_STATUS_SUCCESS; }
hsa_status_t hsa_shut_down(void) { if (!refs) return HSA_STATUS_ERROR_NOT_INITIALIZED; refs--; return HSA_STATUS_SUCCESS; }

hsa_status_t hsa_iterate_agents(hsa_status_t (*cb)(hsa_agent_t, void *), void *data)
{
	if (!refs) return HSA_STATUS_ERROR_NOT_INITIALIZED;
	if (!cb) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
	for (uint64_t h = CPU_AGENT; h < 2 + (uint64_t)double_ndev(); h++) {
		hsa_status_t r = cb((hsa_agent_t){ h }, data);
		if (r != HSA_STATUS_SUCCESS) return r;
	}
	return HSA_STATUS_SUCCESS;
}

/* 0 NAME (char[64]), 17 DEVICE (0 CPU, 1 GPU), 0xA006 BDFID (uint32), 0xA009 PRODUCT_NAME (char[64]). */
hsa_status_t hsa_agent_get_info(hsa_agent_t a, int attr, void *v)
{
	if (!refs) return HSA_STATUS_ERROR_NOT_INITIALIZED;
	if (a.handle != CPU_AGENT && !is_gpu(a.handle)) return HSA_STATUS_ERROR_INVALID_AGENT;
	int gpu = is_gpu(a.handle), n = (int)a.handle - 2;
	switch (attr) {
	case 0: snprintf(v, 64, "%s", gpu ? "gfx000" : "double-cpu"); break;
	case 17: *(uint32_t *)v = gpu ? 1 : 0; break;
	case 0xA006: *(uint32_t *)v = gpu ? (uint32_t)(0xd0 + n) << 8 : 0; break; /* made-up bus d0+n */
	case 0xA009:
		if (gpu) snprintf(v, 64, "rperftest GPU test double %d (host memory, not a GPU)", n);
		else snprintf(v, 64, "double cpu");
		break;
	default: return HSA_STATUS_ERROR_INVALID_ARGUMENT;
	}
	return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_amd_agent_iterate_memory_pools(hsa_agent_t a, hsa_status_t (*cb)(hsa_amd_memory_pool_t, void *), void *data)
{
	if (!refs) return HSA_STATUS_ERROR_NOT_INITIALIZED;
	if (!is_gpu(a.handle)) return a.handle == CPU_AGENT ? HSA_STATUS_SUCCESS : HSA_STATUS_ERROR_INVALID_AGENT;
	for (uint64_t i = 1; i <= 2; i++) {
		hsa_status_t r = cb((hsa_amd_memory_pool_t){ a.handle * 16 + i }, data);
		if (r != HSA_STATUS_SUCCESS) return r;
	}
	return HSA_STATUS_SUCCESS;
}

/* 0 SEGMENT (0 global), 1 GLOBAL_FLAGS (2 fine, 4 coarse), 5 RUNTIME_ALLOC_ALLOWED (bool). */
hsa_status_t hsa_amd_memory_pool_get_info(hsa_amd_memory_pool_t p, int attr, void *v)
{
	if (!is_gpu(p.handle / 16)) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
	int coarse = p.handle % 16 == 2;
	switch (attr) {
	case 0: *(uint32_t *)v = 0; break;
	case 1: *(uint32_t *)v = coarse ? 4 : 2; break;
	case 5: *(bool *)v = true; break;
	default: return HSA_STATUS_ERROR_INVALID_ARGUMENT;
	}
	return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_amd_memory_pool_allocate(hsa_amd_memory_pool_t p, size_t len, uint32_t flags, void **ptr)
{
	if (!refs) return HSA_STATUS_ERROR_NOT_INITIALIZED;
	/* The fine-grained pool would be host-coherent memory: a caller picking it is a bug. */
	if (!is_gpu(p.handle / 16) || p.handle % 16 != 2 || flags || !ptr) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
	uintptr_t base = double_alloc(len);
	if (!base) return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
	*ptr = (void *)base;
	return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_amd_memory_pool_free(void *ptr)
{
	return double_free((uintptr_t)ptr) ? HSA_STATUS_SUCCESS : HSA_STATUS_ERROR_INVALID_ALLOCATION;
}

hsa_status_t hsa_amd_portable_export_dmabuf(const void *ptr, size_t size, int *fd, uint64_t *offset)
{
	if (!refs) return HSA_STATUS_ERROR_NOT_INITIALIZED;
	if (!ptr || !size || !fd || !offset) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
	const struct double_alloc *a = double_find((uintptr_t)ptr, size);
	if (!a) return HSA_STATUS_ERROR_INVALID_ALLOCATION;
	/* ROCr exports whole pages and reports where the pointer lies in them. */
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)ptr & ~(uintptr_t)(page - 1);
	size_t len = ((uintptr_t)ptr - start + size + page - 1) & ~(size_t)(page - 1);
	if (start + len > a->base + a->len) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
	int out = double_export(a, start - a->base, len);
	if (out < 0) return HSA_STATUS_ERROR;
	*fd = out;
	*offset = (uintptr_t)ptr - start;
	return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_amd_portable_close_dmabuf(int fd) { return close(fd) ? HSA_STATUS_ERROR_INVALID_ARGUMENT : HSA_STATUS_SUCCESS; }
