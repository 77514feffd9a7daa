// The propagation of W(N, 100, 1%) in isolation, on one GPU (examples/floors/README.md).
//
// A synthetic brain (rows of 100 sorted random targets, four codes) and a fired list of 1% of it,
// the list's row offsets and chunk index as the early step writes them; the L2 flushed before each
// launch (a burst's rows are cold). Each kernel runs on 2 blocks of 256 an SM, as the resident
// kernel: `chunked` is kernels/propagate.cu's walk (chunks of 256 pairs a warp, the rows found
// among the lanes); `chain-only` the same without the reductions (the chain of dependent loads
// alone); `chunked2` two chunks a warp at once; `chunked_pipe` the next chunk's rows loaded ahead;
// `rowwarp` a warp per fired row, the next rows' sources and starts ahead; `flood` every pair's
// reduction from flat arrays (coalesced operands: the reductions alone). `empty`: the launch.
//
//   nvcc -O3 -arch=sm_90 -std=c++17 -o propagation propagation.cu && ./propagation
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <random>
#include <cuda_runtime.h>
typedef unsigned int u32; typedef unsigned long long u64; typedef unsigned short u16;
#define PPW 256
#define DEAD 0xFFFFFFFFu
struct P { const u32* row_ptr; const u32* targets; const u16* codes; const int* table; const u32* fired; const u64* offs; const u32* chunk_first; u64 pairs; u32 count; int* acc; const u32* flat_t; const int* flat_c; u32* out; };

template <int ITEMS>
__device__ __forceinline__ void stage_rows(const P& p, u64 k0, u32& lo, u32& hi) {
  const u64 k1 = min(k0 + ITEMS * 32, p.pairs);
  lo = k0 < p.pairs ? p.chunk_first[k0 / PPW] : 0;
  hi = k1 < p.pairs ? p.chunk_first[k1 / PPW] : p.count - 1;
}
template <int ITEMS>
__device__ __forceinline__ void warp_pairs(const P& p, u64 k0, u32 lo, u32 hi, u32 (&tg)[ITEMS], int (&cv)[ITEMS]) {
  const u32 lane = threadIdx.x & 31;
  const u64 k1 = min(k0 + ITEMS * 32, p.pairs);
  u64 o = ~0ULL; u32 f = DEAD;
  if (lane <= hi - lo && k0 < p.pairs) { o = p.offs[lo + lane]; f = p.fired[lo + lane]; }
  const u64 rs = f != DEAD ? p.row_ptr[f] : 0;
  const u32 rel = o == ~0ULL ? ~0u : (o <= k0 ? 0u : (u32)min(o - k0, (u64)0xFFFFFFFEULL));
  const u64 shift = rs - o;
  u32 src[ITEMS]; u64 j[ITEMS]; u32 cd[ITEMS];
#pragma unroll
  for (int i = 0; i < ITEMS; i++) {
    const u32 kk = lane + 32 * i; u32 pos = 0;
#pragma unroll
    for (u32 b = 16; b; b >>= 1) { const u32 c = pos + b; const u32 r = __shfl_sync(0xffffffffu, rel, c & 31); if (c < 32 && r <= kk) pos = c; }
    const u32 s = __shfl_sync(0xffffffffu, f, pos); const u64 sh = __shfl_sync(0xffffffffu, shift, pos);
    src[i] = k0 + kk < k1 ? s : DEAD; j[i] = sh + k0 + kk;
  }
#pragma unroll
  for (int i = 0; i < ITEMS; i++) { const bool ok = src[i] != DEAD; tg[i] = ok ? p.targets[j[i]] : 0; cd[i] = ok ? (u32)p.codes[j[i]] : 0; }
#pragma unroll
  for (int i = 0; i < ITEMS; i++) cv[i] = src[i] != DEAD ? p.table[cd[i]] : 0;
}
template <bool RED>
__global__ void __launch_bounds__(256, 2) chunked(P p) {
  const u64 warp = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5, warps = ((u64)gridDim.x * blockDim.x) >> 5;
  int sum = 0;
  for (u64 c = warp; c * PPW < p.pairs; c += warps) {
    u32 tg[8]; int cv[8]; u32 lo, hi; stage_rows<8>(p, c * PPW, lo, hi);
    warp_pairs<8>(p, c * PPW, lo, hi, tg, cv);
#pragma unroll
    for (int i = 0; i < 8; i++) if (cv[i]) { if (RED) atomicAdd(p.acc + tg[i], cv[i]); else sum += tg[i] + cv[i]; }
  }
  if (!RED && sum == 0x1234567) *p.out = sum;
}
// two chunks a warp at once, stages interleaved
__global__ void __launch_bounds__(256, 2) chunked2(P p) {
  const u64 warp = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5, warps = ((u64)gridDim.x * blockDim.x) >> 5;
  for (u64 c = warp; c * PPW < p.pairs; c += 2 * warps) {
    const u64 c2 = c + warps;
    u32 tg[8], tg2[8]; int cv[8], cv2[8]; u32 lo, hi, lo2 = 0, hi2 = 0;
    stage_rows<8>(p, c * PPW, lo, hi);
    stage_rows<8>(p, c2 * PPW, lo2, hi2);
    warp_pairs<8>(p, c * PPW, lo, hi, tg, cv);
    warp_pairs<8>(p, c2 * PPW, lo2, hi2, tg2, cv2);
#pragma unroll
    for (int i = 0; i < 8; i++) if (cv[i]) atomicAdd(p.acc + tg[i], cv[i]);
#pragma unroll
    for (int i = 0; i < 8; i++) if (cv2[i]) atomicAdd(p.acc + tg2[i], cv2[i]);
  }
}
// pipelined: the next chunk's rows (lo, hi) loaded while this one is done
__global__ void __launch_bounds__(256, 2) chunked_pipe(P p) {
  const u64 warp = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5, warps = ((u64)gridDim.x * blockDim.x) >> 5;
  u32 lo, hi; stage_rows<8>(p, warp * PPW, lo, hi);
  for (u64 c = warp; c * PPW < p.pairs; c += warps) {
    u32 nlo, nhi; stage_rows<8>(p, (c + warps) * PPW, nlo, nhi);
    u32 tg[8]; int cv[8];
    warp_pairs<8>(p, c * PPW, lo, hi, tg, cv);
#pragma unroll
    for (int i = 0; i < 8; i++) if (cv[i]) atomicAdd(p.acc + tg[i], cv[i]);
    lo = nlo; hi = nhi;
  }
}
__global__ void __launch_bounds__(256, 2) flood(P p) {
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < p.pairs; i += (u64)gridDim.x * blockDim.x) { const int c = p.flat_c[i]; if (c) atomicAdd(p.acc + p.flat_t[i], c); }
}
// a warp per fired row, 4 items a lane (rows of <= 128), the next row's source and start ahead
__global__ void __launch_bounds__(256, 2) rowwarp(P p) {
  const u32 lane = threadIdx.x & 31;
  const u64 warp = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5, warps = ((u64)gridDim.x * blockDim.x) >> 5;
  u32 s = warp < p.count ? p.fired[warp] : DEAD;
  u32 lo = s != DEAD ? p.row_ptr[s] : 0, hi = s != DEAD ? p.row_ptr[s + 1] : 0;
  u32 s2 = warp + warps < p.count ? p.fired[warp + warps] : DEAD;
  for (u64 a = warp; a < p.count; a += warps) {
    const u32 s3 = a + 2 * warps < p.count ? p.fired[a + 2 * warps] : DEAD;
    const u32 nlo = s2 != DEAD ? p.row_ptr[s2] : 0, nhi = s2 != DEAD ? p.row_ptr[s2 + 1] : 0;
    for (u32 i0 = lo; i0 < hi; i0 += 128) {
      u32 tg[4], cd[4];
#pragma unroll
      for (int k = 0; k < 4; k++) { const u32 i = i0 + lane + 32 * k; tg[k] = i < hi ? p.targets[i] : 0; cd[k] = i < hi ? p.codes[i] : 0; }
#pragma unroll
      for (int k = 0; k < 4; k++) { const u32 i = i0 + lane + 32 * k; if (i < hi) { const int c = p.table[cd[k]]; if (c) atomicAdd(p.acc + tg[k], c); } }
    }
    lo = nlo; hi = nhi; s2 = s3;
  }
}
__global__ void empty() {}
int main(int argc, char** argv) {
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  // runs a case (the median is printed): argv[1], 25 by default (1 under Nsight Compute)
  const int reps = argc > 1 ? std::max(1, atoi(argv[1])) : 25;
  for (u64 N : {100000ull, 1000000ull, 5000000ull}) {
    const u32 K = 100;
    std::mt19937_64 rng(7);
    std::vector<u32> rp(N + 1), tg(N * K); std::vector<u16> cd(N * K);
    for (u64 i = 0; i <= N; i++) rp[i] = (u32)(i * K);
    for (u64 i = 0; i < N * K; i++) { tg[i] = rng() % N; cd[i] = rng() % 4; }
    for (u64 s = 0; s < N; s++) std::sort(tg.begin() + s * K, tg.begin() + (s + 1) * K);
    std::vector<int> tb(65536, 0); for (int c = 0; c < 4; c++) tb[c] = c + 1;
    std::vector<u32> fired; for (u64 s = 0; s < N; s++) if (rng() % 100 == 0) fired.push_back(s);
    const u32 count = fired.size(); std::vector<u64> offs(count); u64 pairs = 0;
    for (u32 i = 0; i < count; i++) { offs[i] = pairs; pairs += K; }
    std::vector<u32> cf((pairs + PPW - 1) / PPW + 1);
    for (u32 i = 0; i < count; i++) for (u64 c = (offs[i] + PPW - 1) / PPW; c * PPW < offs[i] + K; c++) cf[c] = i;
    std::vector<u32> ft(pairs); std::vector<int> fc(pairs);
    for (u32 i = 0; i < count; i++) for (u32 k = 0; k < K; k++) { ft[offs[i] + k] = tg[(u64)fired[i] * K + k]; fc[offs[i] + k] = tb[cd[(u64)fired[i] * K + k]]; }
    auto up = [](const void* h, size_t n) { void* d; cudaMalloc(&d, n); cudaMemcpy(d, h, n, cudaMemcpyHostToDevice); return d; };
    P p;
    p.row_ptr = (u32*)up(rp.data(), rp.size() * 4); p.targets = (u32*)up(tg.data(), tg.size() * 4); p.codes = (u16*)up(cd.data(), cd.size() * 2);
    p.table = (int*)up(tb.data(), tb.size() * 4); p.fired = (u32*)up(fired.data(), count * 4); p.offs = (u64*)up(offs.data(), count * 8);
    p.chunk_first = (u32*)up(cf.data(), cf.size() * 4); p.pairs = pairs; p.count = count;
    cudaMalloc(&p.acc, N * 4); cudaMemset(p.acc, 0, N * 4); cudaMalloc(&p.out, 4);
    p.flat_t = (u32*)up(ft.data(), pairs * 4); p.flat_c = (int*)up(fc.data(), pairs * 4);
    // a big buffer to flush L2 between runs (the rows are cold in a real burst)
    void* junk; cudaMalloc(&junk, 256 << 20);
    auto run = [&](const char* name, auto launch) {
      std::vector<float> t;
      for (int r = 0; r < reps; r++) { cudaMemsetAsync(junk, r, 256 << 20); cudaEventRecord(a); launch(); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); t.push_back(ms * 1000); }
      std::sort(t.begin(), t.end());
      printf("N=%8llu pairs=%8llu %-14s med %7.2f us min %7.2f\n", N, pairs, name, t[reps / 2], t[0]);
    };
    const int G = sms * 2;
    run("empty", [&] { empty<<<G, 256>>>(); });
    run("flood", [&] { flood<<<G, 256>>>(p); });
    run("chunked", [&] { chunked<true><<<G, 256>>>(p); });
    run("chain-only", [&] { chunked<false><<<G, 256>>>(p); });
    run("chunked2", [&] { chunked2<<<G, 256>>>(p); });
    run("chunked_pipe", [&] { chunked_pipe<<<G, 256>>>(p); });
    run("rowwarp", [&] { rowwarp<<<G, 256>>>(p); });
    cudaFree(junk);
  }
  printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
}
