"""The loader's private parts (`vidload.loader` and `vidload.prefetch` are the public modules).

position:  a sampler's place in its epoch (the samplers' state_dict/load_state_dict, start=k,
           items=c), the samplers' shared parts (Resumable, Wrapper), and one global order
           per epoch dealt out to the ranks step by step, from any item count (share).
epochs:    set_epoch on a loader's sampler and dataset; a loader's epoch.
stateful:  make_loader(stateful=True)'s torchdata StatefulDataLoader; imported only then, so
           torchdata stays optional.
"""
