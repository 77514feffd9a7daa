//! Where a burst is launched: how the bursts run ([`launch`]: the resident kernel or graphs), a
//! burst from the host ([`staging`]: the input into the pinned buffer, the launch, the read-back,
//! and [`host_io`], the host's buffers), the resident kernel ([`resident`]), the graphs and the
//! work run ahead of a burst ([`graphs`]), the propagation's variants ([`tiles`]: a large brain's
//! stored synapses binned by target tile; [`procbin`]: binned procedural synapses), learning
//! ([`learn`]), and snapshots and restores ([`snapshot`]).

pub(in crate::backend::cuda) mod graphs;
pub(in crate::backend::cuda) mod host_io;
pub(in crate::backend::cuda) mod launch;
pub(in crate::backend::cuda) mod learn;
pub(in crate::backend::cuda) mod procbin;
pub(in crate::backend::cuda) mod resident;
pub(in crate::backend::cuda) mod snapshot;
pub(in crate::backend::cuda) mod staging;
pub(in crate::backend::cuda) mod tiles;
