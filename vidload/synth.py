"""Sample videos for the benchmark: UCF101-like clips with natural-looking moving content.

Noise compresses badly and flat colour compresses too well; neither gives JPEG or H.264 sizes like
real footage. Each generated video is a smooth, slowly changing colour gradient with low-frequency
texture, seen through a panning and slightly shaking camera, with several textured, soft-edged
shapes moving across it and a little sensor grain. Encoded with libx264 at CRF 18
(`SynthSpec.crf`) and its default preset medium (B-frames, default GOP), 320x240 at 25 fps, about
7 s: close to a UCF101 clip.

With `SynthSpec(actions=True)` the classes are learnable (for `examples/train.py`): every video
also shows a marked disc whose motion is its class (`ACTIONS`), while the disc's colour, size
and place, and the background, are drawn per video, so only the motion tells the classes apart.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from vidload._atomic import writing
from vidload._checks import check_bool, check_int, check_real
from vidload._cv2 import cv2
from vidload.progress import Progress

#: Name of the file that records how a folder of sample videos was generated.
SPEC_FILE = "vidload-synth.json"

_CLASSES = ("Juggling", "Rowing", "Skiing", "Surfing")
#: Class names of `SynthSpec(actions=True)` videos (sorted): what the marked disc does. All four
#: survive a horizontal flip, so flip augmentation keeps every label true.
ACTIONS = ("Falling", "Growing", "Rising", "Shrinking")


@dataclass(frozen=True)
class SynthSpec:
    """What to generate. `seconds * fps` frames per video (rounded), `width x height` pixels."""

    num_videos: int = 8
    width: int = 320
    height: int = 240
    fps: int = 25
    seconds: float = 7.0
    seed: int = 0
    codec: str = "libx264"
    crf: int = 18
    actions: bool = False  # classes = ACTIONS, learnable from motion (see the module docstring)

    def __post_init__(self) -> None:
        checked = {
            "num_videos": check_int("num_videos", self.num_videos, minimum=1),
            "width": check_int("width", self.width),
            "height": check_int("height", self.height),
            "fps": check_int("fps", self.fps, minimum=1),
            "seconds": check_real("seconds", self.seconds),
            "seed": check_int("seed", self.seed),
            "crf": check_int("crf", self.crf, minimum=0),
            "actions": check_bool("actions", self.actions),
        }
        for name, value in checked.items():  # plain Python values: the spec is saved as JSON
            object.__setattr__(self, name, value)
        if self.width < 16 or self.height < 16 or self.width % 2 or self.height % 2:
            raise ValueError(
                f"width x height ({self.width}x{self.height}) must be even and >= 16 each"
            )
        if self.num_frames < 1:
            raise ValueError(
                f"seconds ({self.seconds}) must give at least one frame at {self.fps} fps"
            )

    @property
    def num_frames(self) -> int:
        return int(round(self.seconds * self.fps))


def video_ids(spec: SynthSpec) -> list[str]:
    """Relative paths of the videos `spec` describes, UCF101 style: `Class/v_Class_g01_c01.mp4`,
    sorted."""
    ids = []
    classes = ACTIONS if spec.actions else _CLASSES
    for i in range(spec.num_videos):
        name = classes[i % len(classes)]
        group, clip = divmod(i // len(classes), 4)
        ids.append(f"{name}/v_{name}_g{group + 1:02d}_c{clip + 1:02d}.mp4")
    return sorted(ids)


def make_sample_videos(
    out_dir: str | Path, spec: SynthSpec = SynthSpec(), *, progress: bool = True
) -> list[str]:
    """Write the videos of `spec` under `out_dir` and return their ids (paths relative to it).

    A folder that already holds the same spec (recorded in `out_dir/vidload-synth.json`) and all
    its files is reused as it is; any other content of `out_dir` is left alone. Progress goes to
    stderr when `progress` is true.
    """
    out = Path(out_dir)
    ids = video_ids(spec)
    spec_path = out / SPEC_FILE
    if _is_complete(out, spec, ids):
        return ids
    out.mkdir(parents=True, exist_ok=True)
    spec_path.unlink(missing_ok=True)
    with Progress(len(ids), desc="generate sample videos", unit="video", enabled=progress) as bar:
        for i, vid in enumerate(ids):
            rng = np.random.default_rng([spec.seed, i])
            frames = render_frames(spec, rng)
            if spec.actions:
                action = vid.split("/")[0]
                frames = _with_action(
                    frames, spec, action, np.random.default_rng([spec.seed, i, 1])
                )
            _encode(out / vid, frames, spec)
            bar.update()
    spec_path.write_text(json.dumps(_record(spec), indent=2) + "\n")
    return ids


def _record(spec: SynthSpec) -> dict:
    """What the spec file holds; `actions` only when set, so folders written before the field
    existed are still recognised (and reused) as they are."""
    record = asdict(spec)
    if not spec.actions:
        del record["actions"]
    return record


def _is_complete(out: Path, spec: SynthSpec, ids: Sequence[str]) -> bool:
    try:
        recorded = json.loads((out / SPEC_FILE).read_text())
    except (OSError, ValueError):
        return False
    return recorded == _record(spec) and all((out / v).is_file() for v in ids)


def _encode(path: Path, frames, spec: SynthSpec) -> None:
    """Encode `frames` into the MP4 `path`, atomically: under a hidden temporary name
    (`vidload._atomic`), which a folder walk such as `vidload convert`'s skips, then renamed."""
    with writing(path) as tmp, av.open(str(tmp), "w", format="mp4") as container:
        stream = container.add_stream(spec.codec, rate=Fraction(spec.fps))
        stream.width, stream.height, stream.pix_fmt = spec.width, spec.height, "yuv420p"
        stream.options = {"crf": str(spec.crf)}
        for rgb in frames:
            container.mux(stream.encode(av.VideoFrame.from_ndarray(rgb, format="rgb24")))
        container.mux(stream.encode(None))  # flush


def _with_action(frames, spec: SynthSpec, action: str, rng: np.random.Generator):
    """`frames` with a disc drawn on each, moving as `action` says over the whole video:
    Falling/Rising cross about half the frame height downwards/upwards, Growing/Shrinking
    change its radius 5x at a fixed place. Colour, size and position are drawn from `rng`."""
    h, w, n = spec.height, spec.width, spec.num_frames
    m = min(h, w)
    hue = int(rng.integers(0, 180))
    colour = cv2.cvtColor(np.array([[[hue, 255, 255]]], np.uint8), cv2.COLOR_HSV2RGB)[0, 0]
    colour = tuple(int(c) for c in colour)
    cx = float(rng.uniform(0.35, 0.65)) * w
    cy = float(rng.uniform(0.4, 0.6)) * h
    top, bottom = float(rng.uniform(0.15, 0.3)) * h, float(rng.uniform(0.7, 0.85)) * h
    radius = float(rng.uniform(0.09, 0.14)) * m
    small, large = float(rng.uniform(0.05, 0.07)) * m, float(rng.uniform(0.25, 0.32)) * m
    edge = max(1, m // 40)
    for t, frame in enumerate(frames):
        phase = t / max(1, n - 1)
        y, r = cy, radius
        if action in ("Falling", "Rising"):
            y = top + (bottom - top) * (phase if action == "Falling" else 1 - phase)
        else:
            r = small + (large - small) * (phase if action == "Growing" else 1 - phase)
        centre = (int(round(cx)), int(round(y)))
        cv2.circle(frame, centre, int(round(r)), colour, -1, cv2.LINE_AA)
        cv2.circle(frame, centre, int(round(r)), (0, 0, 0), edge, cv2.LINE_AA)
        yield frame


def _smooth_field(rng: np.random.Generator, h: int, w: int, cells: int, channels: int = 3):
    """float32 (h, w, channels) in about [-1, 1]: random values on a coarse grid, cubic-resized."""
    gh, gw = max(2, h * cells // max(h, w)), max(2, w * cells // max(h, w))
    coarse = rng.uniform(-1, 1, (gh, gw, channels)).astype(np.float32)
    field = cv2.resize(coarse, (w, h), interpolation=cv2.INTER_CUBIC)
    return field.reshape(h, w, channels)


def render_frames(spec: SynthSpec, rng: np.random.Generator):
    """Yield the `spec.num_frames` frames of one video as uint8 (height, width, 3) RGB."""
    h, w, n = spec.height, spec.width, spec.num_frames
    margin_x, margin_y = w // 2, h // 4
    bh, bw = h + 2 * margin_y, w + 2 * margin_x
    tint = rng.uniform(-25, 25, 3).astype(np.float32)
    base = float(rng.uniform(90, 160)) + tint
    yy, xx = np.mgrid[0:bh, 0:bw].astype(np.float32)
    gradient = (
        base
        + 25 * _smooth_field(rng, bh, bw, 3)
        + (yy / bh - 0.5)[..., None] * rng.uniform(-60, 60, 3).astype(np.float32)
        + (xx / bw - 0.5)[..., None] * rng.uniform(-40, 40, 3).astype(np.float32)
    )
    # 1/f luminance texture (foliage, walls, ground) with a little colour in it
    for cells, amp in ((6, 30.0), (16, 20.0), (48, 14.0), (140, 10.0), (bw // 2, 7.0)):
        lum = _smooth_field(rng, bh, bw, cells, 1)
        gradient += amp * (lum + 0.15 * _smooth_field(rng, bh, bw, cells))
    for _ in range(int(rng.integers(3, 8))):  # hard edges: poles, window frames, horizon lines
        x0, y0 = int(rng.integers(0, bw)), int(rng.integers(0, bh))
        x1, y1 = x0 + int(rng.integers(-bw // 3, bw // 3)), y0 + int(rng.integers(-bh, bh))
        colour = tuple(float(c) for c in rng.uniform(20, 235, 3))
        cv2.line(gradient, (x0, y0), (x1, y1), colour, int(rng.integers(1, 6)), cv2.LINE_AA)
    shapes = [_Shape(rng, h, w) for _ in range(int(rng.integers(4, 7)))]
    pan_speed = rng.uniform(0.5, 1.0) * rng.choice([-1, 1])
    for t in range(n):
        phase = t / max(1, n - 1)
        cx = margin_x + pan_speed * (phase - 0.5) * 1.8 * margin_x + 2.0 * np.sin(t * 0.7)
        cy = margin_y + 0.35 * margin_y * np.sin(2 * np.pi * phase) + 1.5 * np.cos(t * 0.9)
        x0 = int(np.clip(round(cx), 0, bw - w))
        y0 = int(np.clip(round(cy), 0, bh - h))
        frame = gradient[y0 : y0 + h, x0 : x0 + w].copy()
        frame *= 1.0 + 0.08 * np.sin(2 * np.pi * phase + base[0] / 255)
        for shape in shapes:
            shape.draw(frame, t)
        frame += rng.normal(0, 2.5, frame.shape).astype(np.float32)
        yield np.clip(frame, 0, 255).astype(np.uint8)


class _Shape:
    """A textured blob with a soft (blurred) edge moving on a smooth path, scaled and rotated."""

    def __init__(self, rng: np.random.Generator, h: int, w: int) -> None:
        size = int(rng.integers(min(h, w) // 6, int(min(h, w) // 2.5)))
        self.size = size
        colour = rng.uniform(30, 220) + rng.uniform(-35, 35, 3).astype(np.float32)
        texture = 35 * _smooth_field(rng, size, size, 8) + 12 * _smooth_field(rng, size, size, 30)
        self.rgb = colour + texture
        mask = np.zeros((size, size), np.float32)
        centre = (size // 2, size // 2)
        if rng.random() < 0.5:
            axes = (size // 2 - 2, int(size * rng.uniform(0.25, 0.48)))
            cv2.ellipse(mask, centre, axes, float(rng.uniform(0, 180)), 0, 360, 1.0, -1)
        else:
            pts = rng.uniform(0.1, 0.9, (int(rng.integers(3, 7)), 2)) * size
            cv2.fillPoly(mask, [cv2.convexHull(pts.astype(np.int32))], 1.0)
        blur = float(rng.uniform(0.8, 3.0))
        self.mask = cv2.GaussianBlur(mask, (0, 0), blur)[..., None]
        self.start = rng.uniform((0, 0), (w, h))
        self.velocity = rng.uniform(-2.5, 2.5, 2)
        self.wobble = rng.uniform(3, 12, 2)
        self.freq = rng.uniform(0.03, 0.12, 2)
        self.h, self.w = h, w

    def draw(self, frame: np.ndarray, t: int) -> None:
        pos = self.start + self.velocity * t + self.wobble * np.sin(self.freq * t)
        x = int(pos[0] % (self.w + self.size)) - self.size
        y = int(pos[1] % (self.h + self.size)) - self.size
        fx0, fy0 = max(0, x), max(0, y)
        fx1, fy1 = min(self.w, x + self.size), min(self.h, y + self.size)
        if fx0 >= fx1 or fy0 >= fy1:
            return
        sl = (slice(fy0 - y, fy1 - y), slice(fx0 - x, fx1 - x))
        alpha = self.mask[sl]
        region = frame[fy0:fy1, fx0:fx1]
        region *= 1.0 - alpha
        region += alpha * self.rgb[sl]
