//! The relay's random streams and wire loss: the workspace's one SplitMix64 and its Bernoulli
//! loss, shared with the simulator (`ccarena_rng`, `ccarena_link::wire`). Each direction of
//! each pipe draws from its own stream ([`SplitMix64::for_direction`]).

pub use ccarena_rng::SplitMix64;
/// Independent random loss with a fixed probability (`ccarena_link::wire::WireLoss`).
pub use ccarena_link::wire::WireLoss as Loss;
