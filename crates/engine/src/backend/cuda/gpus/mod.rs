//! Where GPUs meet: several GPUs of one host as one backend ([`multi`]: `MultiGpu`), one GPU's
//! connection to the others' fired lists ([`peers`]), the linked resident kernels' spike exchange
//! ([`exchange`]), the GPUs meeting between the halves of a propagation whose binned synapses they
//! sum together ([`meeting`]), and a GPU shard of a brain spread over processes ([`engine`]).

pub(in crate::backend::cuda) mod engine;
pub(in crate::backend::cuda) mod exchange;
pub(in crate::backend::cuda) mod meeting;
pub(in crate::backend::cuda) mod multi;
pub(in crate::backend::cuda) mod peers;
