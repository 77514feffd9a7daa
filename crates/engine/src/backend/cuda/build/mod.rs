//! Where a brain is built on a GPU: what a GPU gets of the connectome and its upload
//! ([`connectome`]), a connectome of closed-form fanouts built on the GPU itself ([`on_gpu`]), and
//! what one GPU holds of a brain ([`state`]: `GpuState`, the kernels' `Net`). `CudaBackend::build`
//! (backend.rs) puts them together with the burst side (`super::burst`).

pub(in crate::backend::cuda) mod connectome;
pub(in crate::backend::cuda) mod on_gpu;
pub(in crate::backend::cuda) mod state;
