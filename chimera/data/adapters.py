"""Adapters: a user-supplied directory of a real dataset -> the normalized dataset.

Each adapter only decides *which file carries which label*, following the
dataset's published layout; reading, normalizing and splitting are shared
(chimera.data.dataset). Files whose label cannot be recognized are listed in
the manifest under ``skipped_files`` with the reason; a directory where no
file can be labelled is an error.

Where to get the data (the README repeats this):
- CICIoT2022: https://www.unb.ca/cic/datasets/iotdataset-2022.html
  (folders device / interaction / repetition pcaps; label = interaction folder)
- ISCXVPN2016: https://www.unb.ca/cic/datasets/vpn.html
  (flat pcaps; label = application type from the file name, VPN from the "vpn_" prefix)
- PeerRush: http://peerrush.cs.uga.edu/peerrush/
  (one folder of captures per P2P application; label = application folder)
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from chimera.data.dataset import CaptureSpec, NormalizeOptions, write_dataset
from chimera.errors import DatasetError

log = logging.getLogger(__name__)

CAPTURE_SUFFIXES = (".pcap", ".pcapng", ".cap", ".pcap.gz")


def _captures(root: Path) -> list[Path]:
    if not root.exists():
        raise DatasetError(f"{root}: no such directory", "point --src at the unpacked dataset directory")
    if not root.is_dir():
        raise DatasetError(f"{root}: not a directory", "point --src at the dataset's top directory")
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.name.lower().endswith(CAPTURE_SUFFIXES))
    if not files:
        raise DatasetError(f"{root}: no .pcap/.pcapng files found under it",
                           "check --src; captures must end in .pcap, .pcapng or .cap")
    gz = [p for p in files if p.name.lower().endswith(".gz")]
    if gz:
        raise DatasetError(f"{gz[0]}: compressed captures are not read directly",
                           f"decompress them first: gunzip -k {root}/**/*.gz")
    return files


# ISCXVPN2016 file names -> application type (the dataset's published categories)
ISCX_TYPES: list[tuple[str, str]] = [
    (r"(aim|facebook|hangouts?|icq|skype|gmail)_?chat|chat", "chat"),
    (r"e?mail|gmail|imap|pop3|smtp", "email"),
    (r"ftps|sftp|scp|skype_file|file", "file"),
    (r"netflix|spotify|vimeo|youtube|streaming", "streaming"),
    (r"(facebook|hangouts?|skype)_audio|voipbuster|voip|audio", "voip"),
    (r"bittorrent|torrent|p2p", "p2p"),
]


def iscx_label(name: str) -> str | None:
    """Class of an ISCXVPN2016 file name, e.g. vpn_skype_chat1b.pcap -> vpn_chat."""
    stem = name.lower()
    vpn = stem.startswith("vpn_")
    body = stem[4:] if vpn else stem
    for pat, cls in ISCX_TYPES:
        if re.search(pat, body):
            return ("vpn_" if vpn else "") + cls
    return None


PEERRUSH_APPS = {"emule": "eMule", "utorrent": "uTorrent", "vuze": "Vuze", "frostwire": "Frostwire",
                 "skype": "Skype", "bittorrent": "BitTorrent", "limewire": "LimeWire"}


@dataclass(frozen=True)
class Adapter:
    """How one dataset's layout names the class of a capture file."""

    name: str
    label_of: Callable[[Path, Path], str | None]  # (root, file) -> label or None
    doc: str


def _cic_label(root: Path, f: Path) -> str | None:
    rel = f.relative_to(root)
    return rel.parent.name if len(rel.parts) >= 2 else None


def _peerrush_label(root: Path, f: Path) -> str | None:
    rel = f.relative_to(root)
    for part in rel.parts[:-1]:
        key = re.sub(r"[^a-z]", "", part.lower())
        if key in PEERRUSH_APPS:
            return PEERRUSH_APPS[key]
    key = re.sub(r"[^a-z]", "", rel.parts[0].lower()) if len(rel.parts) >= 2 else ""
    return rel.parts[0] if key else None


ADAPTERS: dict[str, Adapter] = {
    "ciciot2022": Adapter("ciciot2022", _cic_label, "label = the folder holding the capture (interaction)"),
    "iscxvpn2016": Adapter("iscxvpn2016", lambda root, f: iscx_label(f.name),
                           "label = application type from the file name, vpn_ prefix kept"),
    "peerrush": Adapter("peerrush", _peerrush_label, "label = the application folder"),
    "folders": Adapter("folders", _cic_label, "generic: label = parent folder name"),
}


def normalize(adapter: str, src: str | os.PathLike[str], out: str | os.PathLike[str], *, seed: int = 1,
              overwrite: bool = False, options: NormalizeOptions = NormalizeOptions()) -> Path:
    """Turn a real dataset directory into a normalized dataset at ``out``."""
    if adapter not in ADAPTERS:
        raise DatasetError(f"unknown dataset adapter {adapter!r}", f"choose one of {sorted(ADAPTERS)}")
    ad = ADAPTERS[adapter]
    root = Path(src)
    labelled: list[tuple[Path, str]] = []
    skipped: list[dict[str, str]] = []
    for f in _captures(root):
        label = ad.label_of(root, f)
        if label is None:
            skipped.append({"file": str(f), "reason": f"no {adapter} label recognized ({ad.doc})"})
        else:
            labelled.append((f, label))
    for s in skipped:
        log.warning("skipping %s: %s", s["file"], s["reason"])
    if not labelled:
        raise DatasetError(f"{root}: no capture has a recognizable {adapter} label ({ad.doc})",
                           "check the layout (see chimera/data/adapters.py) or use --adapter folders")
    classes = sorted({lab for _, lab in labelled})
    if len(classes) < 2:
        raise DatasetError(f"{root}: only one class ({classes[0]}) found; a classifier needs two or more",
                           "point --src at the directory that holds all class folders")
    caps = [CaptureSpec(f, label=lab) for f, lab in labelled]
    return write_dataset(out, caps, classes, name=f"{adapter}:{root.name}", source=adapter, seed=seed,
                         extra={"adapter": adapter, "src": str(root.resolve()), "skipped_files": skipped},
                         overwrite=overwrite, options=options)
