//! A burst from the host's side: the input written into the pinned buffer (`stage`), the burst
//! handed to the resident kernel or launched as graphs, and its output read back from mapped
//! memory (`launch`). The output protocol: every word the device writes carries a tag of its
//! burst, so the host reads the words in any order and the GPU needs no system-scope fences.

use std::time::Duration;

use cudarc::driver::sys;

use crate::backend::cuda::backend::{CudaBackend, Path};
use crate::backend::cuda::burst::resident::RESIDENT_DIRECT;
use crate::backend::cuda::layout::{dev_err, entry_format, ResParams, DEAD, DEAD_RB, OUT_HEADER};
use crate::backend::cuda::memory::{ColumnLock, Pinned};
use crate::backend::{BackendError, BurstOutput};
use crate::model::{InjectionSlice, Values};

/// A burst the resident kernel has not published after this long is an error (the kernel never
/// finishes, so the stream's status cannot say it is lost).
const RESIDENT_STALL: Duration = Duration::from_secs(10);
/// Once a burst's header is there, its other output words follow within microseconds: this long
/// without one is an error.
const OUTPUT_STALL: Duration = Duration::from_secs(2);

/// A burst's injection, written into the pinned buffer and not yet launched.
pub(crate) struct Staged {
    t_start: std::time::Instant,
    in_bytes: usize,
    /// Every id lies within this GPU's neurons.
    pub in_range: bool,
    /// Some((device address, host address)): the ids lie in a column `prepare_input` page-locked,
    /// where the resident kernel reads them (the pinned buffer holds only the header).
    lent: Option<(u64, u64)>,
    /// The injection's header as written into the pinned buffer (the resident kernel's command
    /// carries it too).
    header: [u64; 2],
}

impl CudaBackend {
    /// Write the input into the pinned buffer; says whether its ids are all this GPU's.
    pub(crate) fn stage(&mut self, input: InjectionSlice<'_>) -> Result<Staged, BackendError> {
        let t_start = std::time::Instant::now();
        // no scan for sorted input (the usual case): its bounds are its ends
        let in_range = input.id_bounds().is_none_or(|(lo, hi)| lo >= self.state.base && hi < self.state.base + self.state.neurons);
        if !in_range {
            return Ok(Staged { t_start, in_bytes: 0, in_range, lent: None, header: [0; 2] });
        }
        if self.launch.path.sharded() && self.state.multi.is_none() {
            return Err(BackendError::Device("one GPU of several bursts only once connected to the others".into()));
        }
        // the early step with no neuron twice: `fix` injects too (no `inject`, no sums)
        let fused = self.state.early.is_some() && input.ascending();
        let ids = input.ids();
        let (fmt, first) = entry_format(input.values());
        let entry = [8, 16, 4][fmt as usize];
        let in_bytes = 16 + entry * ids.len();
        // the resident kernel reads an id column past `RESIDENT_DIRECT` where `prepare_input`
        // locked it (16-byte aligned), or has it sent or copied into device memory
        let lent = (self.launch.resident.is_some() && fmt == 2 && in_bytes as u64 > RESIDENT_DIRECT)
            .then(|| {
                let lock = input.hold().and_then(|h| h.downcast_ref::<ColumnLock>())?;
                let dev = lock.dev_addr(&self.ctx, ids.as_ptr() as *const u8, 4 * ids.len())?;
                (dev % 16 == 0).then_some((dev, ids.as_ptr() as u64))
            })
            .flatten();
        self.ensure_in_capacity(in_bytes)?;
        let header = [ids.len() as u64 | (fused as u64) << 61 | (fmt << 62), first as u64];
        let base = self.io.host_in.ptr();
        // SAFETY: the buffer holds `in_bytes` (ensured above) and nothing reads it now: the previous
        // burst has completed (it published its output after it had read the injection).
        unsafe {
            match input.values() {
                Values::Each(v) if fmt == 1 => {
                    let dst = base.add(16) as *mut u64;
                    for (i, (&n, &p)) in ids.iter().zip(v).enumerate() {
                        dst.add(2 * i).write(n as u64);
                        dst.add(2 * i + 1).write(p as u64);
                    }
                }
                Values::Each(v) if fmt == 0 => {
                    let dst = base.add(16) as *mut u64;
                    for (i, (&n, &p)) in ids.iter().zip(v).enumerate() {
                        dst.add(i).write(n as u64 | ((p as i32 as u32 as u64) << 32));
                    }
                }
                // format 2, locked: copied up from where it lies
                _ if lent.is_some() => {}
                // format 2: the id column as it is
                _ => std::ptr::copy_nonoverlapping(ids.as_ptr(), base.add(16) as *mut u32, ids.len()),
            }
            (base as *mut u64).write(header[0]);
            (base as *mut u64).add(1).write(header[1]);
            std::ptr::write_volatile(self.io.host_out.ptr() as *mut u64, u64::MAX);
        }
        Ok(Staged { t_start, in_bytes, in_range, lent, header })
    }

    /// Make the injection buffer hold `bytes`; replaces it (and the graphs) when too small.
    fn ensure_in_capacity(&mut self, bytes: usize) -> Result<(), BackendError> {
        if bytes <= self.io.host_in.len() {
            return Ok(());
        }
        self.park()?;
        self.stream.synchronize().map_err(dev_err("synchronising"))?;
        let cap = bytes.next_power_of_two();
        let new = Pinned::new(&self.ctx, cap).map_err(dev_err("growing the pinned injection buffer"))?;
        self.io.dev_in = self.stream.alloc_zeros(cap).map_err(dev_err("growing the injection buffer"))?;
        self.io.host_in = new;
        self.state.net.host_in = crate::backend::cuda::layout::dptr(&self.io.dev_in, &self.stream);
        self.state.net.in_cap = cap as u64;
        self.state.net.host_map = self.io.host_in.dev();
        if self.launch.path.resident() {
            Ok(())
        } else {
            self.capture_graphs()
        }
    }

    /// Run the propagation and early step of the next burst unless they have run (or are queued),
    /// and wait for them. One GPU of several in the resident kernel gathers the others' lists
    /// here: the brain calls it on every GPU before any bursts again ([`crate::backend::cuda::MultiGpu`]).
    pub(crate) fn ahead(&mut self) -> Result<(), BackendError> {
        self.ctx.bind_to_thread().map_err(dev_err("binding the context"))?;
        // (on graphs, the burst launches its own)
        if !self.launch.pre_pending && self.launch.path.resident() {
            self.run_ahead(self.launch.cur)?;
            if let Some(l) = &mut self.state.learning {
                l.skip_pending = false;
            }
            // what the kernel would have run after the last burst
            self.launch.pre_pending = true;
        }
        self.stream.synchronize().map_err(dev_err("running the propagation"))
    }

    /// Hand the staged burst to the resident kernel (launched first if it is parked: after the
    /// propagation and early step of the next burst, if they have not run yet).
    fn command_resident(&mut self, in_bytes: usize, lent: Option<(u64, u64)>, header: [u64; 2]) -> Result<(), BackendError> {
        if !self.launch.resident.as_ref().is_some_and(|r| r.running()) {
            if self.launch.path == Path::Linked && !self.launch.pre_pending {
                return Err(BackendError::Device("one GPU of several ran no propagation ahead of its burst".into()));
            }
            self.ahead()?;
            let gathered = self.gathered_side().unwrap_or_default();
            let p = ResParams {
                net: [self.net_for(0), self.net_for(1)],
                side: [self.side(0), self.side(1)],
                cur: self.launch.cur as u32,
                inj_blocks: self.launch.inj_grid,
                learning: self.state.learning.as_ref().map_or(0, |l| l.flags()),
                learn: self.state.learning.as_ref().map(|l| l.params).unwrap_or_default(),
                x: self.launch.exchange.as_ref().map(|x| x.params(&self.stream, gathered)).unwrap_or_default(),
                tiles: self.state.tiles.as_ref().map(|t| t.params(&self.stream)).unwrap_or_default(),
                ..Default::default()
            };
            tracing::trace!(cur = self.launch.cur, "CUDA: launching the resident kernel");
            if let Some(r) = &mut self.launch.resident {
                r.start(p)?;
            }
        }
        // the kernel runs the next burst's propagation and early step after this one
        self.launch.pre_pending = true;
        let (src, host) = lent.unwrap_or((self.io.host_in.dev() + 16, self.io.host_in.ptr() as u64 + 16));
        // where the copy engine would send the entries (`command` decides how they travel)
        let send = (host, self.state.net.host_in + 16);
        if let Some(r) = &mut self.launch.resident {
            r.command(src, in_bytes as u64, header, send);
        }
        if let Some(x) = &mut self.launch.exchange {
            x.commanded();
        }
        Ok(())
    }

    /// Run the staged burst and collect its output.
    pub(crate) fn launch(&mut self, staged: Staged) -> Result<BurstOutput<'_>, BackendError> {
        let Staged { t_start, in_bytes, lent, header, .. } = staged;
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        self.ctx.bind_to_thread().map_err(dev_err("binding the context"))?;
        let t = self.launch.burst + 1;
        let t_write = std::time::Instant::now();
        if self.launch.resident.is_some() {
            self.command_resident(in_bytes, lent, header)?;
        } else {
            self.launch_graphs(in_bytes)?;
        }
        let t_launch = std::time::Instant::now();
        self.wait_for(t)?;
        let t_wait = std::time::Instant::now();
        self.launch.cur = 1 - self.launch.cur;
        self.launch.burst = t;
        // The device writes the output words with no ordering among them (no system fences); each
        // carries a tag of the burst (32 bits on the header words and ids, 16 on the potentials,
        // never 0), and the host zeroes the entries it has read: a word is this burst's once its
        // tag matches.
        let (tag32, tag16) = (t % 0xFFFF_FFFF + 1, t % 0xFFFF + 1);
        let hdr = self.io.host_out.ptr() as *mut u64;
        let base = hdr as usize;
        let resident = self.launch.resident.as_ref();
        let spin_until = |p: *const u64, ok: &dyn Fn(u64) -> bool| -> Result<u64, BackendError> {
            let mut spins = 0u64;
            // the clock is read only once a word is late
            let mut since = None;
            loop {
                // SAFETY: `p` points into the mapped output buffer (aligned u64 words the device writes).
                let w = unsafe { std::ptr::read_volatile(p) };
                if ok(w) {
                    return Ok(w);
                }
                spins += 1;
                if spins.is_multiple_of(65536) && since.get_or_insert_with(std::time::Instant::now).elapsed() > OUTPUT_STALL {
                    let e = format!(
                        "burst {t}: the GPU's output never arrived whole (word {} of the output holds {w:#x}){}",
                        (p as usize - base) / 8,
                        resident.filter(|r| r.running()).map(|r| format!("; {}", r.whereabouts())).unwrap_or_default()
                    );
                    tracing::error!("CUDA: {e}");
                    return Err(BackendError::Device(e));
                }
                std::hint::spin_loop();
            }
        };
        // SAFETY: header words 1 and 2 (fired_total, rb_count) of the mapped output buffer.
        let fired_total = spin_until(unsafe { hdr.add(1) }, &|w| w >> 32 == tag32)? & 0xFFFF_FFFF;
        // SAFETY: as above.
        let rb = (spin_until(unsafe { hdr.add(2) }, &|w| w >> 32 == tag32)? & 0xFFFF_FFFF) as usize;
        if rb > self.io.out_cap {
            return Err(BackendError::Device(format!("burst {t}: {rb} read-back neurons overflow the buffer of {}", self.io.out_cap)));
        }
        // The entries live after the header: tagged ids u64[out_cap], then tagged potentials
        // u64[out_cap]; with the early step one such area per burst parity, then the corrections.
        let area = OUT_HEADER / 8 + if self.state.early.is_some() { (t & 1) as usize * 2 * self.io.out_cap } else { 0 };
        // SAFETY: the areas lie within the output buffer (sized in `build`); rb <= out_cap.
        let (ids, vs) = unsafe { (hdr.add(area), hdr.add(area + self.io.out_cap)) };
        // One bulk copy of both arrays (streaming reads of lines the device wrote: the host's
        // prefetchers keep many misses in flight); an entry whose tag is not there yet is re-read.
        self.io.rb_raw.resize(2 * rb, 0);
        // SAFETY: rb <= out_cap entries of each array; rb_raw holds 2 * rb words.
        unsafe {
            std::ptr::copy_nonoverlapping(ids, self.io.rb_raw.as_mut_ptr(), rb);
            std::ptr::copy_nonoverlapping(vs, self.io.rb_raw.as_mut_ptr().add(rb), rb);
        }
        for i in 0..rb {
            if self.io.rb_raw[i] >> 32 != tag32 {
                // SAFETY: i < rb <= out_cap.
                self.io.rb_raw[i] = spin_until(unsafe { ids.add(i) }, &|w| w >> 32 == tag32)?;
            }
            if self.io.rb_raw[rb + i] >> 48 != tag16 {
                // SAFETY: as above.
                self.io.rb_raw[rb + i] = spin_until(unsafe { vs.add(i) }, &|w| w >> 48 == tag16)?;
            }
        }
        // SAFETY: zero the entries read (rb <= out_cap words each), so no stale tag can match later.
        unsafe {
            std::ptr::write_bytes(ids, 0, rb);
            std::ptr::write_bytes(vs, 0, rb);
        }
        if self.state.early.is_some() {
            // `fix`'s corrections of the early entries: a new potential at fire, or DEAD_RB
            // SAFETY: header word 4 (corrections).
            let nc = (spin_until(unsafe { hdr.add(4) }, &|w| w >> 32 == tag32)? & 0xFFFF_FFFF) as usize;
            if nc > self.io.out_cap {
                return Err(BackendError::Device(format!(
                    "burst {t}: {nc} read-back corrections overflow the buffer of {}",
                    self.io.out_cap
                )));
            }
            // SAFETY: the corrections follow the two areas: slots u64[out_cap], potentials u64[out_cap].
            let (cs, cv) = unsafe { (hdr.add(OUT_HEADER / 8 + 4 * self.io.out_cap), hdr.add(OUT_HEADER / 8 + 5 * self.io.out_cap)) };
            for i in 0..nc {
                // SAFETY: i < nc <= out_cap.
                let slot = spin_until(unsafe { cs.add(i) }, &|w| w >> 32 == tag32)? as u32;
                // SAFETY: as above.
                let v = spin_until(unsafe { cv.add(i) }, &|w| w >> 48 == tag16)?;
                let k = (slot & !DEAD_RB) as usize;
                if k >= rb {
                    return Err(BackendError::Device(format!("burst {t}: a read-back correction names entry {k} of {rb}")));
                }
                if slot & DEAD_RB != 0 {
                    self.io.rb_raw[k] = (tag32 << 32) | DEAD as u64;
                } else {
                    self.io.rb_raw[rb + k] = v;
                }
            }
            // SAFETY: as above, nc words each.
            unsafe {
                std::ptr::write_bytes(cs, 0, nc);
                std::ptr::write_bytes(cv, 0, nc);
            }
        }
        let t_read = self.io.sort_read_back(rb);
        if let Some(tr) = &mut self.io.trace {
            let t_end = std::time::Instant::now();
            tr.bursts += 1;
            tr.write_s += (t_write - t_start).as_secs_f64();
            tr.launch_s += (t_launch - t_write).as_secs_f64();
            tr.wait_s += (t_wait - t_launch).as_secs_f64();
            tr.post_s += (t_end - t_wait).as_secs_f64();
            tr.read_s += (t_read - t_wait).as_secs_f64();
        }
        Ok(BurstOutput { burst: t, fired: &self.io.out_ids, potentials: &self.io.out_v, fired_total })
    }

    /// Wait until burst `t`'s header is in the output buffer (or the GPU says it failed).
    fn wait_for(&mut self, t: u64) -> Result<(), BackendError> {
        let hdr = self.io.host_out.ptr() as *const u64;
        let mut spins: u64 = 0;
        // the clock is read only once a burst is slow
        let mut since = None;
        loop {
            if let Some(tr) = &mut self.io.trace {
                tr.spins += 1;
            }
            // SAFETY: the header is 4 aligned u64 at the start of the mapped output buffer, written by
            // the device; volatile reads see its updates.
            let b = unsafe { std::ptr::read_volatile(hdr) };
            if b == t {
                std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
                return Ok(());
            }
            spins += 1;
            if spins.is_multiple_of(4096) {
                let stream = match &self.launch.resident {
                    Some(r) if r.running() => r.stream().cu_stream(),
                    _ => self.stream.cu_stream(),
                };
                // SAFETY: queries the status of our own stream.
                let r = unsafe { sys::cuStreamQuery(stream) };
                match r {
                    sys::CUresult::CUDA_SUCCESS => {
                        // the stream is done: the header must be there now
                        // SAFETY: as above.
                        let b = unsafe { std::ptr::read_volatile(hdr) };
                        if b == t {
                            return Ok(());
                        }
                        return Err(BackendError::Device(format!("burst {t} finished on the GPU without publishing its output")));
                    }
                    sys::CUresult::CUDA_ERROR_NOT_READY => {}
                    other => return Err(BackendError::Device(format!("CUDA: burst {t} failed on the GPU: {other:?}"))),
                }
                if let Some(r) = self.launch.resident.as_ref().filter(|r| r.running()) {
                    // a kernel that never returns is never "done": a burst this late is lost
                    if since.get_or_insert_with(std::time::Instant::now).elapsed() > RESIDENT_STALL {
                        let e = format!("burst {t} did not come back within {} s: {}", RESIDENT_STALL.as_secs(), r.whereabouts());
                        // said at once: a kernel that never returns can hold up what follows
                        tracing::error!("CUDA: {e}");
                        return Err(BackendError::Device(e));
                    }
                }
                if spins > (1 << 24) {
                    // a long burst (or a stuck one): stop burning a core
                    std::thread::sleep(Duration::from_micros(50));
                }
            } else {
                std::hint::spin_loop();
            }
        }
    }
}
