// The cost of a grid barrier in a persistent kernel (2 blocks of 256 an SM, and 1), as the
// resident kernel's `grid_sync`: each block's thread 0 adds to a counter and spins until every
// block has (examples/floors/README.md).
//
//   nvcc -O3 -arch=sm_90 -std=c++17 -o grid_barrier grid_barrier.cu && ./grid_barrier
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
typedef unsigned long long u64;
__device__ __forceinline__ u64 ld_acq(const u64* p) { u64 v; asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory"); return v; }
__device__ __forceinline__ void red_rel(u64* p, u64 v) { asm volatile("red.release.gpu.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory"); }
// MODE 0: one counter, fence + atomicAdd, thread 0 spins
// MODE 1: one counter, red.release
// MODE 2: S counters (a line each), red.release; lanes 0..S-1 of warp 0 load one each, sum
template <int MODE, int S>
__global__ void __launch_bounds__(256, 2) bar(u64* ctr, int iters, u64* out) {
  u64 arrived = 0;
  for (int it = 0; it < iters; it++) {
    __syncthreads();
    arrived += gridDim.x;
    if (MODE == 0) {
      if (threadIdx.x == 0) { __threadfence(); atomicAdd(ctr, 1ULL); while (ld_acq(ctr) < arrived) {} __threadfence(); }
    } else if (MODE == 1) {
      if (threadIdx.x == 0) { red_rel(ctr, 1ULL); while (ld_acq(ctr) < arrived) {} }
    } else {
      if (threadIdx.x == 0) red_rel(ctr + 16 * (blockIdx.x % S), 1ULL);
      if (threadIdx.x < 32) {
        for (;;) {
          u64 v = threadIdx.x < S ? ld_acq(ctr + 16 * threadIdx.x) : 0;
#pragma unroll
          for (int d = 16; d; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d);
          if (v >= arrived) break;
        }
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0 && blockIdx.x == 0) *out = arrived;
}
int main() {
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  u64 *ctr, *out; cudaMalloc(&ctr, 64 * 128); cudaMalloc(&out, 8);
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  auto run = [&](const char* name, auto k, int grid) {
    std::vector<float> t;
    for (int r = 0; r < 7; r++) {
      cudaMemset(ctr, 0, 64 * 128);
      cudaEventRecord(a); k<<<grid, 256>>>(ctr, 2000, out); cudaEventRecord(b); cudaEventSynchronize(b);
      float ms; cudaEventElapsedTime(&ms, a, b); t.push_back(ms * 1000 / 2000);
    }
    std::sort(t.begin(), t.end());
    printf("%-28s grid %4d: %.3f us a barrier (min %.3f)\n", name, grid, t[3], t[0]);
  };
  for (int g : {sms * 2, sms}) {
    run("fence+atomicAdd, 1 counter", bar<0, 1>, g);
    run("red.release, 1 counter", bar<1, 1>, g);
    run("red.release, 4 counters", bar<2, 4>, g);
    run("red.release, 8 counters", bar<2, 8>, g);
    run("red.release, 16 counters", bar<2, 16>, g);
    run("red.release, 32 counters", bar<2, 32>, g);
  }
  printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
}
