"""The calibration's numbers (pure): the profile fitted from the records."""

from ...model.fit import fit
from ...model.profile import Profile, default_profile


def platform_of(records) -> str:
    return next((r.get("platform_id") for r in records if r.get("platform_id")), "") or "unknown"


def effectively_warm(record) -> bool:
    """A cold record the storage-share check found served by the page cache (issue 17)."""
    return (record.get("cache") or {}).get("effective") == "effectively-warm"


def profile_from_records(records, platform_id=None, platform=None, source="calibration") -> Profile:
    """Fit on top of the built-in defaults, so what the records do not measure keeps a value.
    Cold records that read from the page cache are left out: they would fit page-cache rates as
    storage rates."""
    pid = platform_id or platform_of(records)
    return fit([r for r in records if not effectively_warm(r)], pid, platform, source=source,
               base=default_profile(pid))


def summarise(records) -> dict:
    recs = [r for r in records if r.get("study") == "calibrate"]
    prof = profile_from_records(recs)
    ce = prof.checks.get("chunk_cache", {})
    return {"profile": prof.to_dict(), "lines": prof.summary_lines(), "records": len(recs),
            "effectively_warm": sum(1 for r in recs if effectively_warm(r)),
            "cache_effect": (ce["off"] / ce["fit"]) if ce.get("off") and ce.get("fit") else None}


def headline(records):
    """The study's row of the report's first screen (sections.Headline): the storage's peak
    sequential rate and the cost of a strided request in the fitted profile."""
    from climio.present.sections import Headline, HeadlineRow, cache_state
    recs = [r for r in records if r.get("study") == "calibrate"]
    if not recs:
        return None
    p = summarise(recs)["profile"]
    seq = p["rate_Bps"].get("sequential") or []
    if not seq:
        return None
    text = f"{max(r for _, r in seq) / 1e6:.0f} MB/s sequential peak"
    if p["latency_s"].get("strided"):
        text += f"; {1e6 * p['latency_s']['strided']:.0f} µs per strided request"
    return Headline("calibrate", [HeadlineRow("storage (calibrated profile)", text, cache_state(recs))])
