"""What `vidload bench` and `vidload choose` both measure with (private): neither command is
built on the other's internals; both import from here.

timing:  a pass over the clips, its parts timed together (row_pass), interleaved repeats
         (RoundRobin), cold and warm passes (page-cache eviction), the filesystem of a path.
clocks:  OwnClock (wall-clock less this thread's waits for a CPU) and OtherLoad (other
         processes' CPU use during a phase).
videos:  the user's videos: found, required, linked into a work folder.
tables:  text tables aligned as both commands print them.
plots:   matplotlib for --plot, imported when a chart is drawn.
"""
