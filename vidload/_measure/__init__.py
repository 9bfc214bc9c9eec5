"""What `vidload bench` and `vidload choose` both measure with (private): neither command is
built on the other's internals; both import from here.

clips:   the clips every row reads (sampled from the frame counts every storage has), and
         what a storage holds of a video (its files, its bytes); no torch, so choose's
         command-line help imports it cheaply.
timing:  a pass over the clips, its parts timed together (row_pass), interleaved repeats
         (RoundRobin), cold and warm passes (page-cache eviction), the filesystem of a path,
         a measuring run (measuring: one torch thread, a settled heap) and its log lines.
clocks:  OwnClock (wall-clock less this thread's waits for a CPU) and OtherLoad (other
         processes' CPU use during a phase).
videos:  the user's videos: found, required, linked into a work folder.
build:   one storage built from them by `convert`, its CPU cost timed (bench's kinds,
         choose's candidates).
tables:  the one table writer (text or Markdown) of bench, choose and probe.
plots:   matplotlib for --plot, imported when a chart is drawn.
"""
