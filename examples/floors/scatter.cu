// Scattered reductions into N accumulators (one a neuron), N of them (W(N, 100, 1%)'s pairs a
// burst), by size: random targets (atomicAdd, 8 loads in flight, u64), sorted targets, the
// targets' loads alone, random gathers, and shared-memory atomics (examples/floors/README.md).
// The accumulators stay warm in L2 between launches, as in a burst (the early step read them).
//
//   nvcc -O3 -arch=sm_90 -std=c++17 -o scatter scatter.cu && ./scatter
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
typedef unsigned int u32; typedef unsigned long long u64;
__global__ void reds(int* acc, const u32* __restrict__ tg, u64 P) {
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < P; i += (u64)gridDim.x * blockDim.x) atomicAdd(acc + tg[i], 1);
}
__global__ void reds8(int* acc, const u32* __restrict__ tg, u64 P) {  // 8 loads in flight, then 8 reds
  u64 s = (u64)gridDim.x * blockDim.x;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < P; i += 8 * s) {
    u32 t[8];
#pragma unroll
    for (int k = 0; k < 8; k++) t[k] = i + k * s < P ? tg[i + k * s] : ~0u;
#pragma unroll
    for (int k = 0; k < 8; k++) if (t[k] != ~0u) atomicAdd(acc + t[k], 1);
  }
}
__global__ void reds64(unsigned long long* acc, const u32* __restrict__ tg, u64 P) {
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < P; i += (u64)gridDim.x * blockDim.x) atomicAdd(acc + tg[i], 1ULL);
}
__global__ void empty() {}
__global__ void loads(const u32* __restrict__ tg, u64 P, u32* out) {
  u32 a = 0;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < P; i += (u64)gridDim.x * blockDim.x) a += tg[i];
  if (a == 0x12345) *out = a;
}
__global__ void gathers(const int* acc, const u32* __restrict__ tg, u64 P, u32* out) {
  int a = 0;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < P; i += (u64)gridDim.x * blockDim.x) a += __ldcg(acc + tg[i]);
  if (a == 0x12345) *out = a;
}
// shared-memory atomics (the rate a binned accumulation would reduce at)
__global__ void smem_reds(const u32* __restrict__ tg, u64 P, u32* out) {
  __shared__ int s[8192];
  for (int i = threadIdx.x; i < 8192; i += blockDim.x) s[i] = 0;
  __syncthreads();
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < P; i += (u64)gridDim.x * blockDim.x) atomicAdd(s + (tg[i] & 8191), 1);
  __syncthreads();
  if (s[threadIdx.x] == 0x12345) *out = 1;
}
int main() {
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  u64 sizes[] = {100000, 1000000, 5000000, 20000000, 80000000};
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (u64 N : sizes) {
    u64 P = N;  // W(N,100,1%): N pairs a burst
    std::vector<u32> h(P); srand(1);
    for (u64 i = 0; i < P; i++) h[i] = (u32)(((u64)rand() * 2654435761ULL + rand()) % N);
    u32 *tg, *tgs, *out; int* acc; unsigned long long* acc64;
    cudaMalloc(&tg, P * 4); cudaMalloc(&tgs, P * 4); cudaMalloc(&out, 4); cudaMalloc(&acc, N * 4); cudaMalloc(&acc64, N * 8);
    cudaMemcpy(tg, h.data(), P * 4, cudaMemcpyHostToDevice);
    std::vector<u32> hs = h; std::sort(hs.begin(), hs.end());
    cudaMemcpy(tgs, hs.data(), P * 4, cudaMemcpyHostToDevice);
    cudaMemset(acc, 0, N * 4); cudaMemset(acc64, 0, N * 8);
    auto run = [&](const char* name, int grid, auto launch) {
      std::vector<float> t;
      for (int r = 0; r < 30; r++) { cudaEventRecord(a); launch(grid); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); t.push_back(ms * 1000); }
      std::sort(t.begin() + 5, t.end());
      printf("N=%9llu %-22s grid=%7d  med %8.2f us  min %8.2f us  -> %.1f G/s\n", N, name, grid, t[5 + 12], t[5], P / t[5 + 12] / 1e3);
    };
    int res = sms * 2, big = (int)std::min<u64>((P + 255) / 256, 1 << 20);
    for (int g : {res, sms * 4, big}) {
      run("reds random", g, [&](int G) { reds<<<G, 256>>>(acc, tg, P); });
      run("reds8 random", g, [&](int G) { reds8<<<G, 256>>>(acc, tg, P); });
    }
    run("reds sorted", big, [&](int G) { reds<<<G, 256>>>(acc, tgs, P); });
    run("reds64 random", big, [&](int G) { reds64<<<G, 256>>>(acc64, tg, P); });
    run("loads only", res, [&](int G) { loads<<<G, 256>>>(tg, P, out); });
    run("gathers random", big, [&](int G) { gathers<<<G, 256>>>(acc, tg, P, out); });
    run("smem reds", res, [&](int G) { smem_reds<<<G, 256>>>(tg, P, out); });
    run("empty", 1, [&](int G) { empty<<<G, 32>>>(); });
    cudaFree(tg); cudaFree(tgs); cudaFree(out); cudaFree(acc); cudaFree(acc64);
  }
  printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
}
