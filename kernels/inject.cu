// inject.cu: the burst's sensory injection (after common.cuh; see there).

// inject: the burst's sensory injection into `inj` (wrapping sums) and the injected-neuron mask,
// and the burst's counters reset (it runs right before `step`). The header is always in the
// device copy (net.host_in); the entries too (`mapped` null), or (`mapped`: the resident kernel's
// direct input) where they lie in host memory: the pinned buffer, or the caller's page-locked
// column.
// The injection's header, read by thread 0 and 1 into `hdr` (shared; the caller syncs).
__device__ __forceinline__ void load_injection_header(const Net& net, u64* hdr) {
    if (threadIdx.x < 2) hdr[threadIdx.x] = __ldcv(((const u64*)net.host_in) + threadIdx.x);
}

// Entry i of the injection: this GPU's local neuron index and the value.
__device__ __forceinline__ void injection_entry(const Net& net, const u8* mapped, const u64* hdr, u64 i, u32& id, i64& val) {
    const u32 fmt = (u32)(hdr[0] >> 62);
    const u8* entries = mapped ? mapped : net.host_in + 16;
    if (fmt == 1) {
        const u64* e = (const u64*)(entries + i * 16);
        id = (u32)(mapped ? __ldcv(e) : e[0]);
        val = (i64)(mapped ? __ldcv(e + 1) : e[1]);
    } else if (fmt == 2) {
        const u32* e = ((const u32*)entries) + i;
        id = mapped ? __ldcv(e) : *e;
        val = (i64)hdr[1];
    } else {
        const u64* p = (const u64*)(entries + i * 8);
        const u64 e = mapped ? __ldcv(p) : *p;
        id = (u32)e;
        val = (i64)(int)(u32)(e >> 32);
    }
    id -= net.base;
}

__device__ void inject_impl(const Net& net, const Side& wr, const u8* mapped, Blk b) {
    __shared__ u64 hdr[2];
    load_injection_header(net, hdr);
    if (b.id == 0 && threadIdx.x == 0 && !net.early) {
        *wr.counter = 0;
        *net.rb_counter = 0;
        *net.burst += 1;
    }
    __syncthreads();
    const u64 ninj = hdr[0] & INJ_COUNT_MASK;
    for (u64 i = (u64)b.id * blockDim.x + threadIdx.x; i < ninj; i += (u64)b.n * blockDim.x) {
        u32 id;
        i64 val;
        injection_entry(net, mapped, hdr, i, id, val);
        atomicAdd(net.inj + id, (u64)val);
        atomicOr(net.inj_mask + (id >> 5), 1u << (id & 31));
    }
}

extern "C" __global__ void __launch_bounds__(256) inject(Net net, Side wr) { inject_impl(net, wr, nullptr, hw_blk()); }
