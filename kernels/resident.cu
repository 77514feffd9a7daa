// resident.cu: the kernel that runs one GPU's bursts (after common.cuh, inject.cu,
// propagate.cu and step.cu; see common.cuh).

// ---------------------------------------------------------------------------------------------
// The resident kernel (on every GPU, the early step; several GPUs exchange their fired lists
// below): one cooperative launch
// that stays on the GPU and runs every burst's phases itself, each over a grid-wide barrier, so
// that a burst costs the host no API call: the host writes the injection's header (its pinned
// buffer) and a command (`Ctl`, mapped), block 0 sees the command, the grid copies the entries
// from host memory (the pinned buffer, or the caller's page-locked column) into the device
// buffer, then runs inject (a neuron twice), fix (publishes the burst as before), and the next
// burst's propagation and early step. The phases are the kernels above, each over its own grid of
// blocks (`Blk`), run by the resident blocks in turn.

// What the host writes (mapped pinned memory): the command, in eight words of one 64-byte line,
// each `tag << 32 | half` where tag is the command's number (32 low bits) and the halves, low
// first, are: where the entries lie (a device address, 16-byte aligned); their bytes (header
// included) | RES_DIRECT | RES_QUIT; the injection's header (two words). Every word carries its
// own tag, so block 0 takes the whole command (the header too) in the one PCIe round trip that
// sees it: no second load after the number (a 64-bit word is read whole; the words of a line
// need not be).
struct Ctl {
    u64 w[8];
    u64 at;    // written by the kernel (block 0): command number << 8 | phase, for diagnostics
    u64 sent;  // the host's: what its copy stream sends into `ResDev::sent` after an injection
    u64 pad_[6];
};
#define RES_QUIT (1ULL << 63)
// The entries are read where they lie (the pinned buffer) by `inject` and `fix`: no copy, no
// barrier (small input).
#define RES_DIRECT (1ULL << 62)
// The entries are sent into the device copy by the copy engine while the grid still works ahead
// (back to back, any injection): block 0 waits until `ResDev::sent` holds the command's number
// (the host's stream writes it after the copy), and the grid copies nothing.
#define RES_SENT (1ULL << 61)
#define RES_FLAGS (RES_QUIT | RES_DIRECT | RES_SENT)

// Whether block 0 brings a direct injection's entries into the device copy itself (at most 2 x
// 16 bytes a thread), from the command's bytes word; else the grid copies them, or `inject` and
// `fix` read them where they lie.
__device__ __forceinline__ bool res_whole(u64 cmd_bytes, u64 in_cap) {
    const u64 bytes = cmd_bytes & ~RES_FLAGS;
    return (cmd_bytes & RES_DIRECT) && bytes <= 32ull * blockDim.x && bytes <= in_cap;
}

// The phases of the work ahead of a burst, as `ResDev::t` times them: learning (mark, shift,
// rows, growth), propagation (direct, or tiled: binning), the tiles' split, their sums, the early
// step; then block 0's wait for the command, its hand-on to the grid (a small injection loaded),
// and the rest of the burst (`inject`, `fix`).
#define RES_PHASES 11

// The resident kernel's words in device memory (zeroed before each launch).
struct ResDev {
    u64 bar;   // grid barrier: arrivals so far
    u64 go;    // the command, from block 0 to the others
    u64 src;
    u64 bytes;
    // block 0's time (ns, %globaltimer) in the work ahead of the bursts since the launch, by
    // phase (RES_PHASES), and the bursts (NEUROBURST_CUDA_TRACE=1 reports it)
    u64 t[RES_PHASES];
    u64 ahead;
    u64 sent;  // the last command whose entries the copy engine has sent (the host's stream writes it)
    u64 head;  // the command's injection header, word 0 (with `src` and `bytes`: block 0 to the others)
    u64 fixed; // the command whose `fix` is done: its publishing block to the grid
};

// One GPU of several (the resident kernel on each): after `fix`, every block copies its share of
// this GPU's fired list into every GPU's inbox (peer stores over NVLink; its own too), fences at
// system scope and adds one to that GPU's arrivals; each block then waits until its own GPU's
// arrivals count every block of every GPU, and the grid gathers the inbox into the whole brain's
// list with this GPU's row offsets (`gather_impl`). The inboxes alternate by exchange parity: a GPU
// writes an inbox again only two exchanges later, once its owner has pushed the exchange between,
// which it does only after it has gathered this one.

// Where this GPU's list goes on one GPU of the brain (the host's `Link` is generated from this).
struct Link {
    u32* ids[2];    // by parity: that GPU's inbox region for this GPU's list
    u64* count[2];  // by parity: that GPU's word for this GPU's count (count << count_shift)
    u64* arrivals;  // that GPU's arrival counters (2 words, by parity)
};

// One GPU of several in the resident kernel (the host's `Xchg` is generated from this).
struct Xchg {
    const Link* links;     // one per GPU of the brain, this one's included
    const Peer* inbox[2];  // by parity: where every GPU's list lands here (gather's peer table)
    u64* arrivals;         // this GPU's arrival counters (2 words, by parity; never cleared)
    Side gathered;         // the whole brain's list of the last burst, this GPU's row offsets
    u64 done;              // exchanges before this launch's first
    u64 per;               // arrivals per exchange: every block of every GPU
    u32 n;                 // GPUs (0: one GPU alone)
    u32 pad;
};

// The resident kernel's parameters (the host's `ResParams` is generated from this).
struct ResParams {
    Net net[2];   // the bursts reading side 0 and side 1 (`net_for`)
    Side side[2];
    const Ctl* ctl;
    ResDev* dev;
    u64 last;     // the command number before the first one to run
    u32 cur;      // the side the first burst reads
    u32 inj_blocks;
    u32 learning;  // bit 0: the brain learns, from `learn`; bit 1: it has associative mappings (growth)
    Learn learn;
    Xchg x;
    Tiles tiles;  // n_tiles 0: the propagation is direct
};

__device__ __forceinline__ u64 ld_acquire_sys(const u64* p) {
    u64 v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ u64 ld_acquire_gpu(const u64* p) {
    u64 v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ u64 ld_relaxed_sys(const u64* p) {
    u64 v;
    asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_release_gpu(u64* p, u64 v) {
    asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void red_release_gpu(u64* p, u64 v) {
    asm volatile("red.release.gpu.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ u64 globaltimer() {
    u64 t;
    asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
    return t;
}



// Where block 0 is, into the host's `Ctl::at` (for diagnostics, and for the host to see whether
// the grid still works ahead): a posted write by a thread of warp 1, which never fences. Written by
// thread 0, the fences of the grid barriers and the command's poll waited for it (a PCIe round
// trip each).
__device__ __forceinline__ void say(u64* at, u64 v) {
    if (blockIdx.x == 0 && threadIdx.x == 32) *(volatile u64*)at = v;
}

// A block's arrival at the grid barrier (`arrived` counts the arrivals in every block alike: they
// only grow). Alone, at the end of a burst's work ahead: every block goes on to wait for the next
// command, which block 0 passes on only once every block has arrived (one barrier's wait less).
// The block's writes are ordered before the arrival by its barrier and a release reduction (no
// fence, no returned value: one H200, W(100k) 17.4-17.8 -> 17.0-17.1 us a burst;
// examples/floors/grid_barrier.cu: 1.31 -> 1.18 us a barrier).
__device__ __forceinline__ void grid_arrive(ResDev* dev, u64& arrived) {
    __syncthreads();
    arrived += gridDim.x;
    if (threadIdx.x == 0) red_release_gpu(&dev->bar, 1ULL);
}

// Every block of the grid waits here for all the others; what each wrote before is then seen by
// all.
__device__ __forceinline__ void grid_sync(ResDev* dev, u64& arrived) {
    grid_arrive(dev, arrived);
    if (threadIdx.x == 0) {
        while (ld_acquire_gpu(&dev->bar) < arrived) {}
        __threadfence();
    }
    __syncthreads();
}

// The blocks 0 .. n - 1 of a phase, over the resident blocks.
template <typename F>
__device__ __forceinline__ void each_blk(u32 n, F f) {
    for (u32 v = blockIdx.x; v < n; v += gridDim.x) {
        __syncthreads();
        f(Blk{v, n});
    }
}

// An exchange that has not come whole after this long (ns) is lost (a GPU of the brain stopped):
// the kernel returns, and the host's next burst reports it.
#define XCHG_LOST_NS 20000000000ULL

// The exchange (see `Xchg`) of the list `own` (this GPU's part of the burst just published) as
// exchange `e`, then the gather into x.gathered (its counter zeroed before). False: lost.
template <typename RP>
__device__ bool exchange(const Xchg& x, const Net& net, const Side& own, u64 e, u64& arrived, ResDev* dev) {
    const u32 par = (u32)(e & 1);
    const u64 packed = *(volatile const u64*)own.counter;
    const u32 count = (u32)(packed >> net.count_shift);
    const u32* ids = own.fired;
    const u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    for (u32 g = 0; g < x.n; g++) {
        u32* dst = x.links[g].ids[par];
        for (u64 i = tid; i < count; i += stride) dst[i] = ids[i];
    }
    __threadfence_system();
    __syncthreads();
    __shared__ u32 s_lost;
    if (threadIdx.x == 0) {
        if (blockIdx.x == 0)
            for (u32 g = 0; g < x.n; g++) *(volatile u64*)x.links[g].count[par] = (u64)count << net.count_shift;
        __threadfence_system();
        for (u32 g = 0; g < x.n; g++) atomicAdd_system(x.links[g].arrivals + par, 1ULL);
        // every block of every GPU has pushed its share of exchange e (those of this parity: (e + 1) / 2)
        const u64 want = ((e + 1) / 2) * x.per;
        const u64 since = globaltimer();
        u32 lost = 0;
        while (ld_acquire_sys(x.arrivals + par) < want) {
            if (globaltimer() - since > XCHG_LOST_NS) { lost = 1; break; }
        }
        s_lost = lost;
    }
    __syncthreads();
    if (s_lost) return false;
    gather_impl<RP>(net, x.gathered, x.inbox[par], x.n);
    grid_sync(dev, arrived);
    return true;
}

template <typename ACC, typename RP, typename CODE>
__device__ void resident_impl(const ResParams& p) {
    // the command: its number, where the entries lie, their bytes, the header's two words
    __shared__ u64 s_cmd[5];
    u64 arrived = 0;
    // the last command seen: block 0 reads the host's word (the last number written before the
    // launch), the others the device word (zeroed before the launch; numbers are never 0)
    u64 last = blockIdx.x == 0 ? p.last : 0;
    u32 r = p.cur;
    u64 ex = p.x.done;
    // block 0, lanes 0-7: the next command's words, asked for before the early step (a load in
    // flight through it: no wait), looked at once it is done
    u64 ahead_w = 0;
    // block 0's clock at each phase's end (its thread 0 keeps the sums in shared memory, and
    // writes them to `ResDev` when the kernel returns: a global add a phase was a load's round
    // trip on block 0's path, five times a burst)
    __shared__ u64 s_t[RES_PHASES + 1];
    if (threadIdx.x == 0)
        for (int k = 0; k <= RES_PHASES; k++) s_t[k] = 0;
    u64 lap = blockIdx.x == 0 && threadIdx.x == 0 ? globaltimer() : 0;
    auto phase = [&](int k) {
        if (blockIdx.x == 0 && threadIdx.x == 0) {
            const u64 now = globaltimer();
            s_t[k] += now - lap;
            lap = now;
        }
    };
    auto times_out = [&]() {
        if (blockIdx.x == 0 && threadIdx.x == 0) {
            for (int k = 0; k < RES_PHASES; k++) p.dev->t[k] = s_t[k];
            p.dev->ahead = s_t[RES_PHASES];
        }
    };
    for (;;) {
        // 1. the next command: block 0 polls the host's words, the others a word in device memory
        if (blockIdx.x == 0) {
            if (threadIdx.x < 32) {
                // lanes 0-7 load a word each (one request: the line), until every word carries the
                // next number's tag; each load an acquire, so the entries' loads come after it (no
                // fence: a system fence waits for this thread's writes to host memory too)
                const u32 tag = (u32)((last & ~RES_QUIT) + 1);
                const u32 lane = threadIdx.x;
                u64 w = ahead_w;
                if (__all_sync(0xffffffffu, lane >= 8 || (u32)(w >> 32) == tag)) {
                    // asked for before the early step, and there: only the acquire's fence, and
                    // none when the entries are sent (then nothing the host wrote before the
                    // command is read from host memory: the entries come after `ResDev::sent`'s
                    // acquire, the header with the command)
                    const u64 flags = (u64)__shfl_sync(0xffffffffu, (u32)w, 3) << 32;
                    if (!(flags & RES_SENT)) asm volatile("fence.acq_rel.sys;" ::: "memory");
                } else {
                    for (;;) {
                        if (lane < 8) w = ld_acquire_sys(&p.ctl->w[lane]);
                        if (__all_sync(0xffffffffu, lane >= 8 || (u32)(w >> 32) == tag)) break;
                    }
                }
                phase(8);
                const u64 word = (w & 0xffffffffull) | ((u64)__shfl_down_sync(0xffffffffu, (u32)w, 1) << 32);
                if (lane < 8 && (lane & 1) == 0) s_cmd[1 + lane / 2] = word;
            }
            __syncthreads();
            const u64 bytes = s_cmd[2];
            const bool quit = (bytes & RES_QUIT) != 0;
            const u64 g = ((last & ~RES_QUIT) + 1) | (quit ? RES_QUIT : 0);
            // a small injection's entries (at most 8 KB: 2 x 16 bytes a thread) into the device
            // copy, the header from the command; a larger one the grid copies, or `inject` and
            // `fix` read where it lies
            if (!quit) {
                if (res_whole(bytes, p.net[0].in_cap)) {
                    const u64 n = ((bytes & ~RES_FLAGS) + 15) / 16;
                    uint4 v[2];
#pragma unroll
                    for (int k = 0; k < 2; k++) {
                        const u32 i = threadIdx.x + k * blockDim.x;
                        if (i >= 1 && i < n && 16ull * (i + 1) <= p.net[0].in_cap) v[k] = __ldcv(((const uint4*)p.net[0].host_map) + i);
                    }
#pragma unroll
                    for (int k = 0; k < 2; k++) {
                        const u32 i = threadIdx.x + k * blockDim.x;
                        if (i >= 1 && i < n && 16ull * (i + 1) <= p.net[0].in_cap) ((uint4*)p.net[0].host_in)[i] = v[k];
                    }
                }
                if (threadIdx.x < 2) ((u64*)p.net[0].host_in)[threadIdx.x] = s_cmd[3 + threadIdx.x];
            }
            if (threadIdx.x == 0) {
                // sent by the copy engine: here once the host's stream has written the number
                if (!quit && (bytes & RES_SENT))
                    while (ld_acquire_sys(&p.dev->sent) != (g & ~RES_QUIT)) {}
                s_cmd[0] = g;
                *(volatile u64*)&p.dev->src = s_cmd[1];
                *(volatile u64*)&p.dev->bytes = s_cmd[2];
                *(volatile u64*)&p.dev->head = s_cmd[3];
            }
            __syncthreads();
            if (threadIdx.x == 0) {
                // every block done with the last burst's work ahead (`grid_arrive`)
                while (ld_acquire_gpu(&p.dev->bar) < arrived) {}
                __threadfence();
                st_release_gpu(&p.dev->go, s_cmd[0]);
            }
            phase(9);
        } else if (threadIdx.x == 0) {
            u64 g;
            while ((g = ld_acquire_gpu(&p.dev->go)) == last) __nanosleep(32);
            s_cmd[0] = g;
            s_cmd[1] = *(volatile u64*)&p.dev->src;
            s_cmd[2] = *(volatile u64*)&p.dev->bytes;
            s_cmd[3] = *(volatile u64*)&p.dev->head;
        }
        __syncthreads();
        const u64 g = s_cmd[0];
        const u64 src = s_cmd[1];
        const u64 cmd_bytes = s_cmd[2];
        const bool direct = (cmd_bytes & RES_DIRECT) != 0;
        const bool sent = (cmd_bytes & RES_SENT) != 0;
        const u64 bytes = cmd_bytes & ~RES_FLAGS;
        const u64 head = s_cmd[3];
        __syncthreads();
        last = g;
        if (g & RES_QUIT) {
            times_out();
            return;
        }
        // where block 0 is
        u64* const at = (u64*)&p.ctl->at;
        const u64 num = (g & ~RES_QUIT) << 8;
        say(at, num | 1);
        // the gathered list's counter, for this burst's exchange (block 0 runs fix's first block:
        // its fence and ticket come before the end of fix that the grid waits for)
        if (p.x.n && blockIdx.x == 0 && threadIdx.x == 0) *p.x.gathered.counter = 0;
        const Net& net = p.net[r];
        const Side& wr = p.side[1 - r];
        const Side& rd = p.side[r];
        // 2. the entries into the device buffer (block 0 put the header there, and all of a
        // small injection), from `src`, 16 bytes a thread (then the last 4-byte words); or a
        // direct injection read by `inject` and `fix` where it lies, at `src` (the pinned buffer
        // past the header, or the caller's column: never small enough for block 0 to bring it)
        const u8* const mapped = (direct && !res_whole(cmd_bytes, net.in_cap)) ? (const u8*)src : nullptr;
        if (!direct && !sent) {
            u8* dst = (u8*)net.host_in;
            const u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
            const u64 stride = (u64)gridDim.x * blockDim.x;
            const u64 body = bytes - 16;
            const uint4* s16 = (const uint4*)src;
            uint4* d16 = (uint4*)(dst + 16);
            for (u64 i = tid; i < body / 16; i += stride) d16[i] = __ldcv(s16 + i);
            for (u64 w = (body / 16) * 4 + tid; w < body / 4; w += stride) ((u32*)(dst + 16))[w] = __ldcv(((const u32*)src) + w);
            grid_sync(p.dev, arrived);
        }
        say(at, num | 2);
        // 3. inject (a neuron twice: sums), then fix, which publishes the burst to the host
        // no neuron twice (the header's bit 61): `fix` injects too
        const bool fused = (head >> 61) & 1;
        if (!fused) {
            each_blk(p.inj_blocks, [&](Blk b) { inject_impl(net, wr, mapped, b); });
            grid_sync(p.dev, arrived);
        }
        say(at, num | 3);
        // the block that publishes the burst (the last of fix's blocks: every other one fenced
        // and took its ticket before) tells the grid, instead of a barrier every block arrives at
        bool published = false;
        // one GPU's brain that learns: `fix` mends `spec` into the list's bits, and learning's
        // record reads them there (no mark, no barrier: learn.cu)
        const bool bits = p.learning && !p.x.n;
        each_blk(p.inj_blocks, [&](Blk b) { published |= fix_impl<ACC, RP>(net, wr, rd, mapped, head, b, bits); });
        if (published) {
            if (bits) *p.learn.n_active = 0;
            st_release_gpu(&p.dev->fixed, g);
        }
        else if (threadIdx.x == 0)
            while (ld_acquire_gpu(&p.dev->fixed) != g) {}
        __syncthreads();
        phase(10);
        say(at, num | 4);
        // 4. ahead of the next burst (it reads side 1 - r): the propagation of the list just
        // written (on several GPUs, the whole brain's, exchanged), then the early step
        const Net& next = p.net[1 - r];
        const Side& list = p.x.n ? p.x.gathered : p.side[1 - r];
        if (p.x.n) {
            if (!exchange<RP>(p.x, next, p.side[1 - r], ++ex, arrived, p.dev)) {
                say(at, num | 7);
                times_out();
                return;
            }
        }
        // the phases whose work any number of blocks shares (grid-stride loops) run as one block
        // each of the resident grid: no rounds of blocks, and no block waits at a round's end for
        // its slowest warp (W(100k) every synapse plastic: learning's mark 6.4 -> 1.9 us, shift
        // 14.8 -> 3.2 us, period 60.4 -> 38.3 us)
        const Blk grid{blockIdx.x, gridDim.x};
        // whether learning's rows propagated the list's rows (learn.cu: not before growth, which
        // writes weights after them, nor into tiles; one GPU: on several, not yet checked there)
        bool propagated = false;
        if (p.learning) {
            // learning from the list just written, before it is propagated (learn.cu)
            if (!bits) {
                learn_mark_impl(p.learn, list, next.count_shift, grid);
                grid_sync(p.dev, arrived);
                phase(0);
            }
            learn_shift_impl(p.learn, grid, bits ? net.spec : p.learn.now, !bits);
            grid_sync(p.dev, arrived);
            phase(1);
            propagated = learn_rows_impl<ACC, RP, CODE>(p.learn, next, grid, !(p.learning & 2) && !p.tiles.n_tiles && !p.x.n);
            grid_sync(p.dev, arrived);
            phase(2);
            if (p.learning & 2) {
                if (blockIdx.x == 0) learn_grow_impl<RP, CODE>(p.learn, next, Blk{0, 1});
                grid_sync(p.dev, arrived);
                phase(3);
            }
        }
        if (p.tiles.n_tiles) {
            tile_bin_impl<RP, CODE>(next, list, p.tiles);
            grid_sync(p.dev, arrived);
            phase(4);
            tile_split_impl(next, p.tiles);
            grid_sync(p.dev, arrived);
            phase(5);
            each_blk(p.tiles.n_tiles, [&](Blk b) { tile_sum_impl(next, p.tiles, b); });
            grid_sync(p.dev, arrived);
            phase(6);
        } else if (!propagated || (next.n_proc && !next.proc_binned)) {
            propagate_impl<ACC, RP, CODE>(next, list, grid, !propagated);
            grid_sync(p.dev, arrived);
            phase(4);
        }
        say(at, num | 5);
        if (blockIdx.x == 0 && threadIdx.x < 8) ahead_w = ld_relaxed_sys(&p.ctl->w[threadIdx.x]);
        prestep_impl<ACC, RP>(next, p.side[r], grid);
        grid_arrive(p.dev, arrived);
        phase(7);
        if (blockIdx.x == 0 && threadIdx.x == 0) s_t[RES_PHASES] += 1;
        say(at, num | 6);
        r = 1 - r;
    }
}

// Up to 2 blocks of 256 an SM: registers for every phase's code in one kernel. A brain that
// learns runs the kernel of a second program (the same source with RES_MINB 4, compiled when
// first needed: the resident kernels are most of the compile time), 4 blocks an SM (64 registers
// a thread, some spilled): learning's phases walk rows with chains of dependent loads and gain
// from twice the warps, while the static phases lose (resident.rs has the figures).
#ifndef RES_MINB
#define RES_MINB 2
#endif
#define RESIDENT(SUFFIX, ACC, RP, CODE) \
    extern "C" __global__ void __launch_bounds__(256, RES_MINB) resident_##SUFFIX(const __grid_constant__ ResParams p) { resident_impl<ACC, RP, CODE>(p); }
EACH_VARIANT(RESIDENT)
