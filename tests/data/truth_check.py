#!/usr/bin/env python3
"""Compares reqlife's per-request server phases with the known-truth server's own figures.

Usage: truth_check.py SERVER_LOG REQLIFE_LOG_CSV [--phase socket|handle] [--tail [--top PCT]]

SERVER_LOG is truth_server's --log (lines: proto client_port req_end_off arrival_ns read_ns
write_start_ns delay_ns); REQLIFE_LOG_CSV is reqlife's --log-requests (a header row, columns
found by name: port, tx_end, server_socket_ns, server_handle_ns, total_ns). A request is
joined by (client_port, req_end_off) = (port, tx_end). The server's own socket time is
read_ns - arrival_ns, its read->write write_start_ns - read_ns.

Prints one JSON object: the CSV's rows, those with reqlife's server phases, those joined to
the server's log, and per phase (socket, handle, or the one --phase names) how many joined
requests are within tolerance of the server's own figure (handle: max(5 us, 5%); socket:
max(15 us, 15%)), their share, and the median and p99 absolute differences in us. The
server's own socket time is exact only for the last request of a read (a read's stamp is its
newest segment's arrival): socket also gives how many joined requests ended earlier in a read
they shared, and the figures over the others alone (last_in_read).

--tail: of the joined requests with a total_ns, the slowest PCT% by total (1 unless --top
says) and the server's own socket share of their time (sum of the server's socket times /
sum of reqlife's totals), beside reqlife's share from its server_socket_ns for the same
requests.

Bad input: one line on stderr naming what is wrong, exit 2. Python 3 standard library only.
"""

import csv
import json
import math
import sys

TOLERANCE = {"socket": (15_000, 0.15), "handle": (5_000, 0.05)}
COLUMN = {"socket": "server_socket_ns", "handle": "server_handle_ns"}
USAGE = (
    "usage: truth_check.py SERVER_LOG REQLIFE_LOG_CSV [--phase socket|handle] "
    "[--tail [--top PCT]]"
)


class BadInput(Exception):
    """What is wrong with the input, in one line."""


def parse_args(argv):
    files, phases, tail, top = [], ["socket", "handle"], False, 1.0
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--phase":
            if i + 1 >= len(argv) or argv[i + 1] not in TOLERANCE:
                raise BadInput("--phase takes socket or handle")
            phases = [argv[i + 1]]
            i += 1
        elif a == "--tail":
            tail = True
        elif a == "--top":
            try:
                top = float(argv[i + 1])
            except (IndexError, ValueError):
                top = -1.0
            if not 0 < top <= 100:
                raise BadInput("--top takes a percentage above 0 and at most 100, e.g. 1")
            i += 1
        elif a.startswith("-"):
            raise BadInput(f"unknown option {a}; valid: --phase socket|handle, --tail, --top PCT")
        else:
            files.append(a)
        i += 1
    if len(files) != 2:
        raise BadInput(f"two files are needed, got {len(files)}; {USAGE}")
    return files[0], files[1], phases, tail, top


def read_server_log(path):
    """(port, end) -> (arrival_ns, read_ns, write_ns); keys seen twice are ambiguous. Also the
    keys of requests that ended before the last one in a read they shared: their arrival_ns
    is that of the read's newest segment, later than their own last byte's."""
    own, ambiguous, last_in_read = {}, set(), {}
    try:
        f = open(path, encoding="ascii")
    except OSError as e:
        raise BadInput(f"cannot read the server's log {path}: {e.strerror}")
    with f:
        for n, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
            try:
                if len(parts) != 7 or parts[0] not in ("h1", "h2", "ws"):
                    raise ValueError
                port, end, arrival, read, write, _delay = map(int, parts[1:])
            except ValueError:
                raise BadInput(
                    f"{path}:{n}: not a truth_server line (proto client_port req_end_off "
                    f"arrival_ns read_ns write_start_ns delay_ns): {line.strip()[:80]!r}"
                )
            key = (port, end)
            if key in own:
                ambiguous.add(key)
            own[key] = (arrival, read, write)
            last = last_in_read.get((port, read))
            if last is None or end > last:
                last_in_read[(port, read)] = end
    for key in ambiguous:
        del own[key]
    earlier = {k for k in own if last_in_read[(k[0], own[k][1])] != k[1]}
    return own, ambiguous, earlier


def number(cells, i, name, path, n):
    """Cell `i` (column `name`) as an int, or None when it is empty."""
    v = cells[i].strip()
    if v == "":
        return None
    try:
        return int(v)
    except ValueError:
        try:
            return int(float(v))
        except ValueError:
            raise BadInput(f"{path}: row {n}: column {name} is not a number: {v[:40]!r}")


def read_csv(path, need, optional=()):
    """The rows' values of the columns `need` (which must be there) and `optional` (None
    where the column is not)."""
    try:
        f = open(path, newline="", encoding="utf-8")
    except OSError as e:
        raise BadInput(f"cannot read reqlife's CSV {path}: {e.strerror}")
    with f:
        reader = csv.reader(f)
        header = next(reader, None)
        if not header:
            raise BadInput(f"{path}: empty, a header row is needed")
        header = [h.strip() for h in header]
        missing = [c for c in need if c not in header]
        if missing:
            raise BadInput(
                f"{path}: no column {', '.join(missing)} (it has: {', '.join(header)[:300]})"
            )
        at = {c: header.index(c) for c in need}
        absent = [c for c in optional if c not in header]
        at.update({c: header.index(c) for c in optional if c in header})
        rows = []
        for n, cells in enumerate(reader, 2):
            if not cells:
                continue
            if len(cells) < len(header):
                raise BadInput(f"{path}: row {n} has {len(cells)} cells, the header {len(header)}")
            row = {c: number(cells, i, c, path, n) for c, i in at.items()}
            row.update({c: None for c in absent})
            rows.append(row)
        return rows


def percentile(sorted_values, q):
    """Nearest rank."""
    if not sorted_values:
        return None
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


def own_figure(phase, arrival, read, write):
    if phase == "socket":
        return read - arrival if arrival else None  # 0: the kernel gave no stamp
    return write - read


def agreement(rows, own, phase, keys=None):
    """How the joined requests' `phase` (of those in `keys`, if given) agrees with the
    server's own figure."""
    floor_ns, share = TOLERANCE[phase]
    diffs, within = [], 0
    for r in rows:
        key = (r["port"], r["tx_end"])
        got, o = r[COLUMN[phase]], own.get(key)
        if got is None or o is None or (keys is not None and key not in keys):
            continue
        truth = own_figure(phase, *o)
        if truth is None:
            continue
        d = abs(got - truth)
        diffs.append(d)
        within += d <= max(floor_ns, share * truth)
    diffs.sort()
    return {
        "tolerance": f"max({floor_ns // 1000} us, {round(share * 100)}%)",
        "compared": len(diffs),
        "within": within,
        "within_share": round(within / len(diffs), 4) if diffs else None,
        "median_abs_diff_us": round(percentile(diffs, 0.5) / 1000, 3) if diffs else None,
        "p99_abs_diff_us": round(percentile(diffs, 0.99) / 1000, 3) if diffs else None,
    }


def compare(rows, own, earlier, phases):
    out = {}
    for phase in phases:
        out[phase] = agreement(rows, own, phase)
    if "socket" in phases:
        # The server's own socket time is exact only for the last request of each read.
        last = {k for k in own if k not in earlier}
        out["socket"]["earlier_in_shared_read"] = sum(
            (r["port"], r["tx_end"]) in earlier for r in rows
        )
        out["socket"]["last_in_read"] = agreement(rows, own, "socket", last)
    return out


def tail(rows, own, top):
    joined = [
        (r, own[(r["port"], r["tx_end"])])
        for r in rows
        if r["total_ns"] is not None and (r["port"], r["tx_end"]) in own
    ]
    joined = [(r, o) for r, o in joined if o[0]]  # a server socket time is known
    if not joined:
        return {"tail_requests": 0, "of_joined": 0}
    joined.sort(key=lambda ro: ro[0]["total_ns"], reverse=True)
    k = max(1, math.ceil(len(joined) * top / 100))
    slow = joined[:k]
    total = sum(r["total_ns"] for r, _ in slow)
    own_socket = sum(o[1] - o[0] for _, o in slow)
    with_reqlife = [r for r, _ in slow if r[COLUMN["socket"]] is not None]
    return {
        "top_percent": top,
        "of_joined": len(joined),
        "tail_requests": k,
        "min_total_us": round(slow[-1][0]["total_ns"] / 1000, 3),
        "server_socket_share": round(own_socket / total, 4) if total else None,
        "reqlife_socket_share": round(
            sum(r[COLUMN["socket"]] for r in with_reqlife)
            / sum(r["total_ns"] for r in with_reqlife),
            4,
        )
        if with_reqlife and sum(r["total_ns"] for r in with_reqlife)
        else None,
        "reqlife_socket_present": len(with_reqlife),
    }


def main(argv):
    log_path, csv_path, phases, want_tail, top = parse_args(argv)
    own, ambiguous, earlier = read_server_log(log_path)
    if want_tail:
        phases = ["socket"]
        rows = read_csv(csv_path, ["port", "tx_end", "total_ns"], [COLUMN["socket"]])
    else:
        rows = read_csv(csv_path, ["port", "tx_end"] + [COLUMN[p] for p in phases])
    rows_all = len(rows)
    with_phases = sum(any(r[COLUMN[p]] is not None for p in phases) for r in rows)
    joined = sum((r["port"], r["tx_end"]) in own for r in rows)
    result = {
        "csv_rows": rows_all,
        "with_server_phases": with_phases,
        "with_server_phases_share": round(with_phases / rows_all, 4) if rows_all else None,
        "server_log_requests": len(own) + len(ambiguous),
        "ambiguous_keys": len(ambiguous),
        "joined": joined,
        "joined_share": round(joined / rows_all, 4) if rows_all else None,
    }
    if want_tail:
        result["tail"] = tail(rows, own, top)
    else:
        result.update(compare(rows, own, earlier, phases))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BadInput as e:
        print(f"truth_check: {e}", file=sys.stderr)
        sys.exit(2)
