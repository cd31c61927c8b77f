"""What an interaction repeated leaves in the page's heap, from three snapshots to an agent's words; pure, any thread.

tools/memory.py takes the snapshots on the session thread: one after a warm-up, one after each of two
rounds of the interaction. A group (a constructor, a closure's function, a DOM node's tag) leaks
when it grew in both rounds by at least one per repetition: a cache filled once, a lazy module loaded
on first use or the engine's own garbage grow in one round at most, or by less. heap_snapshot.py
reads the snapshots; core/performance_tools.py compares two stored measurements."""

from mcpbrowser import heap_snapshot

SHOWN = 5          # growing groups an answer names; the stored detail keeps all
STEADY = 0.5       # the rounds' growths within this share of each other: growth with each repetition
KINDS = {"": "", "closure": "closure ", "detached": "detached ", "string": ""}


def label(kind, name):
    """Entry, closure onResize(), detached <div>, event listeners, (strings)."""
    if kind == "closure":
        return f"closure {name}()"
    return "event listeners" if name == "EventListener" else f"{KINDS.get(kind, '')}{name}"


def grown(first, second, third, repeat):
    """The groups that grew in both rounds by at least `repeat` (one a repetition), and those that moved less.

    first, second, third: heap_snapshot.Snapshot.groups() of the three snapshots."""
    leaks: list[dict] = []
    noise: list[dict] = []
    for key, (count, size, _ids) in third.items():
        before, middle = first.get(key, (0, 0, ())), second.get(key, (0, 0, ()))
        d1, d2 = middle[0] - before[0], count - middle[0]
        if d1 <= 0 and d2 <= 0:
            continue
        row = {"kind": key[0], "name": key[1], "count": count, "grew": [d1, d2],
               "perRepetition": round((d1 + d2) / (2 * repeat), 1), "selfBytes": size - before[1]}
        # Strings are not judged: the engine's own caches (numbers as strings, names) grow them by a few. Nor
        # the browser's performance timeline entries (PerformanceEventTiming, LargestContentfulPaint,
        # LayoutShift): its buffers, bounded, not the page's.
        timeline = key[1].startswith("Performance") or key[1].endswith("ContentfulPaint") or key[1] == "LayoutShift"
        judged = key[0] != "string" and not timeline
        steady = judged and min(d1, d2) >= repeat and min(d1, d2) >= STEADY * max(d1, d2)
        (leaks if steady else noise).append(row)
    leaks.sort(key=lambda r: (-r["selfBytes"], -r["perRepetition"]))
    noise.sort(key=lambda r: -max(r["grew"]))
    return leaks, noise


def holders(snapshot, groups, leaks, new_ids):
    """Each leak's sample (an object of it the last round made) with what holds it, and its script; those
    held by the server's own code in the page or the browser's own buffers taken out and returned."""
    own = []
    for row in list(leaks[:SHOWN]):
        ids = [i for i in groups[(row["kind"], row["name"])][2] if i in new_ids]
        offset = snapshot.offset_of(ids[-1]) if ids else None
        if offset is None:
            continue
        path = snapshot.retainers(offset)
        holder = heap_snapshot.not_the_pages(snapshot, path) if path else None
        if holder is not None:
            leaks.remove(row)
            own.append({**row, "heldBy": holder})
            continue
        row["heldBy"] = heap_snapshot.path_words(snapshot, path) or "nothing reachable from window (an internal root)"
        where = snapshot.location(offset)
        if where:
            row["script"] = where
    return own


def report(first, second, third_snapshot, totals, repeat, context):
    """One measurement: context (url, interaction, ...), the heap's totals, what leaked and what only moved.

    first, second: the earlier snapshots' groups; totals: the three snapshots' heap sizes in bytes."""
    third = third_snapshot.groups()
    leaks, noise = grown(first, second, third, repeat)
    new_ids = {i for e in third.values() for i in e[2]} - {i for e in second.values() for i in e[2]}
    own = holders(third_snapshot, third, leaks, new_ids)
    return {**context, "repeat": repeat, "heapBytes": totals, "leaks": leaks, "moved": (own + noise)[:20],
            "sizes": "self sizes (what each object holds itself, not what it keeps alive)"}


def kb(size):
    return f"{size / 1000:.1f} kB" if size < 1_000_000 else f"{size / 1_000_000:.1f} MB"


def summary(measured):
    """The answer: the verdict, each leak with its count a repetition, its size and its holder."""
    leaks = measured["leaks"]
    lines = [f"Measured: {measured['url']}, {measured['interaction']}: a warm-up, then 2 rounds of "
             f"{measured['repeat']}."]
    if not leaks:
        lines.append("Nothing grew with each repetition (beyond run-to-run noise).")
    else:
        lines.append(f"Grew with each repetition ({len(leaks)}):")
        for row in leaks[:SHOWN]:
            words = (f"- {label(row['kind'], row['name'])}: +{row['perRepetition']:g} each time, "
                     f"{kb(row['selfBytes'])} in all")  # the size: all that grew, not one's
            if row.get("script"):
                words += f", {row['script']}"
            if row.get("heldBy"):
                words += f"; held by {row['heldBy']}"
            lines.append(words)
        if len(leaks) > SHOWN:
            lines.append(f"- and {len(leaks) - SHOWN} more (get_content).")
    return "\n".join(lines)


def _growth(measured):
    """The heap's growth a repetition over the two rounds, in bytes."""
    first, _, last = measured["heapBytes"]
    return (last - first) / (2 * measured["repeat"])


def compare(before, after):
    """What a change did to what an interaction leaks: the leaks gone, come and still there, and the heap's growth."""
    lines = []
    if (before["url"], before["interaction"]) != (after["url"], after["interaction"]):
        lines.append(f"Not alike: {before['interaction']} on {before['url']} then {after['interaction']} "
                     f"on {after['url']}.")
    old = {(r["kind"], r["name"]): r for r in before["leaks"]}
    new = {(r["kind"], r["name"]): r for r in after["leaks"]}
    was, now = _growth(before), _growth(after)
    lines.append(f"Heap growth a repetition: {'-' if was < 0 else ''}{kb(abs(was))} -> "
                 f"{'-' if now < 0 else ''}{kb(abs(now))}.")
    gone = [f"{label(*key)} (+{row['perRepetition']:g} each before)" for key, row in old.items() if key not in new]
    came = [f"{label(*key)} +{row['perRepetition']:g} each" for key, row in new.items() if key not in old]
    still = [f"{label(*key)} +{old[key]['perRepetition']:g} -> +{row['perRepetition']:g} each"
             for key, row in new.items() if key in old]
    for words, rows in (("No longer grows", gone), ("New leak", came), ("Still growing", still)):
        if rows:
            more = f"; and {len(rows) - SHOWN} more" if len(rows) > SHOWN else ""
            lines.append(f"{words}: " + "; ".join(rows[:SHOWN]) + more + ".")
    if not (gone or came or still):
        lines.append("Nothing grew with each repetition, before or after.")
    return "\n".join(lines)
