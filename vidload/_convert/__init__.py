"""The parts of `vidload.convert`, one job each:

* `inputs`: what to read, a local INPUT or an INPUT URL, found as one `Location`
  (`find_input`; `find_inputs`, `label_inputs`), the check that no container lands on
  or around an input, and the local copy a job reads an INPUT URL's item from (`input_copy`);
* `options`: a run's options (`ConvertOptions`), checked once; what to store is recorded in the
  output folder;
* `output`: where a run writes, a local folder or a bucket prefix, one class written against
  `Location` (`Output`; `run_job` a shard's side); `remote` what a bucket needs (staging,
  uploads);
* `frames`: the JPEG byte streams a container stores;
* `job`: one video's conversion, as a worker runs it;
* `resume`: what a run resumes from (the manifest, part manifests, stale temporaries);
* `report`: what a run makes and reports (`ConvertFormat`, `ConvertReport`, re-exported by
  `vidload.convert`).

`vidload.shards` plans and runs the jobs (on `vidload._parallel`); `vidload.convert` is the
public entry point. The output folder's names are `vidload._layout`'s.
"""
