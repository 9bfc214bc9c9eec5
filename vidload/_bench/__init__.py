"""The pieces behind `vidload bench` (private; the public entry point is `vidload.bench`).

workdir: the sample or user videos and their converted copies, cached in a work folder.
loaders: every way of reading a clip that the benchmark compares, behind one small interface,
         and the rows of a run (build_loaders).
dataloader: the benchmark's DataLoader over a fixed clip list (the timing tools: vidload._measure).
run:     one benchmark run: the rows, the clips, every measurement, the results dictionary.
report:  tables (text and Markdown), JSON and the bar chart.
"""
