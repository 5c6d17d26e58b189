"""The cost model: a training trace (``accel/trace.py``) turned into time and energy on Booster,
the Ideal 32-core, the Ideal GPU and the inter-record (IR) design (the paper's §III-§V).

Each accelerated step (① histograms, ③ partitions, ⑤ tree traversal) costs, node by node,
``max(memory time, compute time)`` on a machine that double-buffers its streams (§III-B), or
their sum without it:

* memory time = bytes / ``MEM_BYTES_PER_S``, the same memory for every machine (§IV);
  bytes are whole 64-byte blocks touched, counted from the rows each node really held;
* compute time = operations x cycles per operation / (parallelism x clock).

Booster's ① is compute-limited per cluster: a record of ``S`` one-byte SRAM slots occupies
``ceil(S / 64)`` clusters, so ``50 // ceil(S / 64)`` records are binned at once, each in
``8 x L`` cycles, where ``L`` is the updates on the busiest SRAM (1 with group-by-field
mapping; the data's own mean with naive packing, §III-A). The ideal machines and IR do one
8-cycle field update per field per record, 32, 64 or ``copies`` at a time. Step ② is the
host's (the measured hardwood time, spread ideally over the host's 32 cores), the same for
every machine (§IV), and so is the reduction of the histogram copies at the end of ①.

Counts are scaled from the traced run to the modelled one: row-proportional counts (rows,
blocks) by ``rows / traced rows``, every per-tree count by ``trees / traced trees``; ② and the
reductions, which depend on bins and nodes, not rows, by the tree ratio only.
"""
from __future__ import annotations

import math
import numbers

from dataclasses import dataclass, replace

import numpy as np

from ..backends.booster import BLOCK_SPANS
from . import constants as C

STEPS = ("histogram", "split", "partition", "update")  # ① ② ③ ⑤
MACHINES = ("multicore", "gpu", "ir", "booster")


@dataclass(frozen=True)
class Config:
    """The model's switches (Fig. 9: naive packing, group-by-field, + column format)."""
    group_by_field: bool = True
    column_format: bool = True
    double_buffer: bool = True
    ideal_column_format: bool = False  # the redundant format for the ideal machines too
    ideal_cycles_per_op: float = C.IDEAL_CYCLES_PER_OP
    host_split_seconds: float | None = None  # override ②'s measured host time (per tree)

    def __post_init__(self):
        c = self.ideal_cycles_per_op
        if isinstance(c, bool) or not isinstance(c, numbers.Real) or not (
                math.isfinite(c) and c > 0):
            raise ValueError(f"ideal_cycles_per_op must be a finite number > 0, got {c!r}")
        s = self.host_split_seconds
        if s is not None and (isinstance(s, bool) or not isinstance(s, numbers.Real)
                              or not (math.isfinite(s) and s >= 0)):
            raise ValueError(f"host_split_seconds must be a finite number >= 0 (seconds per "
                             f"tree), got {s!r}")


def _check_scale(name, v):
    """``rows``/``trees`` of a simulation: None (the trace's own) or a positive integer
    (rows=-100 gave speedups, 0 a bare ZeroDivisionError, NaN a table of NaN)."""
    if v is not None and (isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1):
        raise ValueError(f"{name} must be a positive integer (or None: the trace's), got {v!r}")


def _span_index(k):
    return BLOCK_SPANS.index(int(k))


def field_bytes(n_bins, group_by_field):
    """Bytes of each field in a row-major record: group-by-field repeats a field's bin once
    per SRAM it spans (§III-C(3)); a naive record holds each field's bin in 1 byte (2 past
    256 bins)."""
    n_bins = np.asarray(n_bins, dtype=np.int64)
    if group_by_field:
        return -(-n_bins // C.SRAM_BINS)
    return np.where(n_bins <= C.SRAM_BINS, 1, 2).astype(np.int64)


def record_layout(rec_bytes):
    """(records per block k, blocks per record b) of a row-major record: records of at most
    a block share blocks, each in a power-of-two slot (a record never straddles two blocks;
    §III-C(2) packs two records below half a block); wider records take ``ceil(S / 64)``
    blocks each."""
    rec_bytes = max(1, int(rec_bytes))
    if rec_bytes > C.BLOCK_BYTES:
        return 1, -(-rec_bytes // C.BLOCK_BYTES)
    k = C.BLOCK_BYTES // rec_bytes
    return 1 << (int(k).bit_length() - 1), 1


def _blocks(rows, blocks_by_span, k, b):
    """Blocks touched by ``rows`` records (``blocks_by_span``: distinct blocks per span)."""
    if b > 1:
        return rows * b
    return blocks_by_span[..., _span_index(k)]


def _time(mem_bytes, compute_s, double_buffer):
    mem_s = mem_bytes / C.MEM_BYTES_PER_S
    return np.maximum(mem_s, compute_s) if double_buffer else mem_s + compute_s


def ir_copies(total_bins):
    """Histogram copies (processing units) the inter-record design fits in Booster's area."""
    return int(C.IR_SRAM_BYTES // (int(total_bins) * C.BIN_BYTES))


def booster_replicas(layout, group_by_field):
    """(records binned at once, SRAMs per record, busiest-SRAM load) of Booster's ①."""
    if group_by_field:
        slots = int(field_bytes(layout.n_bins, True).sum())
        load = 1.0
    else:
        slots = -(-layout.total_bins // C.SRAM_BINS)  # bins packed in field order
        load = float(layout.naive_max_load)
    clusters = -(-slots // C.BUS_PER_CLUSTER)
    return max(0, C.CLUSTERS // clusters), slots, load


def _machine(name, cfg, layout):
    """(parallel ways, clock Hz, cycles per op, histogram copies to reduce, reducer)."""
    c = cfg.ideal_cycles_per_op
    if name == "multicore":
        return C.MULTICORE_WAYS, C.MULTICORE_HZ, c, C.MULTICORE_WAYS
    if name == "gpu":
        return C.GPU_WAYS, C.GPU_HZ, c, C.GPU_WAYS
    if name == "ir":
        n = ir_copies(layout.total_bins)
        return n, C.IR_HZ, C.CYCLES_PER_FIELD_UPDATE, n
    raise ValueError(name)


def step_seconds(trace, machine, cfg=Config(), rows=None, trees=None):
    """{step: seconds} of training on ``machine`` (multicore, gpu, ir, booster) with ``rows``
    records and ``trees`` trees (default: the trace's own), and the bytes moved and SRAM
    accesses (for energy). None when the machine cannot hold the model (IR without one
    histogram copy)."""
    _check_scale("rows", rows)
    _check_scale("trees", trees)
    lay = trace.layout
    s_r = 1.0 if rows is None else rows / lay.n_rows
    s_t = 1.0 if trees is None else trees / trace.n_trees
    d = lay.n_fields
    booster = machine == "booster"
    gbf = cfg.group_by_field if booster else False
    col = cfg.column_format if booster else cfg.ideal_column_format
    fb = field_bytes(lay.n_bins, gbf)
    cw = field_bytes(lay.n_bins, False)  # a column entry: the field's bin in 1 or 2 bytes
    rec = int(fb.sum())
    k, b = record_layout(rec)
    if booster:
        replicas, _, load = booster_replicas(lay, gbf)
        if replicas == 0:
            return None
        ways, hz, cyc = C.BU_COUNT, C.BOOSTER_HZ, None
        copies = replicas
    else:
        ways, hz, cyc, copies = _machine(machine, cfg, lay)
        if ways < 1:
            return None
    out = {s: 0.0 for s in STEPS}
    mem_total = 0.0
    sram = 0.0
    reduce_ops = 0.0
    gh_k = C.BLOCK_BYTES // C.GH_BYTES
    for t in trace.trees:
        # ① -------------------------------------------------------------------------------
        if t.hist_rows:
            n1 = np.asarray(t.hist_rows, dtype=np.float64) * s_r
            blk = np.asarray(t.hist_blocks, dtype=np.float64) * s_r
            rec_blocks = _blocks(n1, blk, k, b)
            # g, h fetched once per field partition of a wide record (§III-C(1), (2))
            gh_passes = b if booster else 1
            mem = (n1 * C.POINTER_BYTES + rec_blocks * C.BLOCK_BYTES
                   + gh_passes * blk[:, _span_index(gh_k)] * C.BLOCK_BYTES)
            if booster:
                comp = n1 * C.CYCLES_PER_FIELD_UPDATE * load / (replicas * hz)
            else:
                comp = n1 * d * cyc / (ways * hz)
            out["histogram"] += float(_time(mem, comp, cfg.double_buffer).sum())
            mem_total += float(mem.sum())
            sram += float(2 * d * n1.sum())  # each update reads and writes its bin
            reduce_ops += len(t.hist_rows) * copies * lay.total_bins * 2
        # ③ -------------------------------------------------------------------------------
        if t.part_rows:
            n3 = np.asarray(t.part_rows, dtype=np.float64) * s_r
            blk = np.asarray(t.part_blocks, dtype=np.float64) * s_r
            if col:
                w = cw[np.asarray(t.part_field, dtype=np.int64)]
                spans = np.asarray([_span_index(C.BLOCK_BYTES // int(x)) for x in w])
                data = blk[np.arange(len(spans)), spans] * C.BLOCK_BYTES
            else:
                data = _blocks(n3, blk, k, b) * C.BLOCK_BYTES
            mem = 2 * n3 * C.POINTER_BYTES + data  # pointers in, pointers out
            per = C.CYCLES_PER_PREDICATE if booster else cyc
            comp = n3 * per / (ways * hz)
            out["partition"] += float(_time(mem, comp, cfg.double_buffer).sum())
            mem_total += float(mem.sum())
        # ⑤ -------------------------------------------------------------------------------
        n5 = t.n_rows * s_r
        visits = float(np.dot(t.leaf_rows, np.asarray(t.leaf_depth) + 1)) * s_r
        if col:
            data = n5 * float(sum(int(cw[f]) for f in t.fields))
        else:
            data = (n5 / k if b == 1 else n5 * b) * C.BLOCK_BYTES
        mem = data + 2 * n5 * C.GH_BYTES  # g, h read and written back
        per = C.CYCLES_PER_VERTEX if booster else cyc
        comp = visits * per / (ways * hz)
        out["update"] += float(_time(np.float64(mem), comp, cfg.double_buffer))
        mem_total += mem
        sram += visits
    # the reduction of the histogram copies: on the host for Booster and IR, on the machine
    # itself for the ideal ones (at its own parallelism, one add a cycle)
    if machine in ("booster", "ir"):
        red = reduce_ops * C.HOST_CYCLES_PER_ADD / (C.HOST_CORES * C.HOST_HZ)
    else:
        red = reduce_ops * C.HOST_CYCLES_PER_ADD / (ways * hz)
    out["histogram"] += red
    out["split"] = host_split_seconds(trace, cfg)
    out = {s: v * s_t for s, v in out.items()}
    out["total"] = sum(out[s] for s in STEPS)
    out["dram_bytes"] = mem_total * s_t
    out["sram_accesses"] = sram * s_t
    return out


def host_split_seconds(trace, cfg=Config()):
    """② on the host for the traced trees: hardwood's measured split-finding time (on the
    trace's ``n_jobs`` threads) spread ideally over the host's 32 cores, or
    ``cfg.host_split_seconds`` per tree."""
    if cfg.host_split_seconds is not None:
        return cfg.host_split_seconds * trace.n_trees
    return trace.host["split"] * trace.n_jobs / C.HOST_CORES


def sequential_breakdown(trace, rows=None, trees=None):
    """hardwood's measured single-run host seconds per step, scaled as the model's counts
    (①③⑤ by rows and trees, ② by trees): the paper's Fig. 6 for hardwood."""
    s_r = 1.0 if rows is None else rows / trace.layout.n_rows
    s_t = 1.0 if trees is None else trees / trace.n_trees
    h = trace.host
    return {"histogram": h["histogram"] * s_r * s_t, "split": h["split"] * s_t,
            "partition": h["partition"] * s_r * s_t, "update": h["update"] * s_r * s_t}


def inference_seconds(trace, machine, rows=None, trees=C.INFER_TREES):
    """Batch inference of ``rows`` records through ``trees`` trees (the traced trees, repeated
    in turn) on Booster (``INFER_REPLICAS`` copies of the trees, one tree per BU, each BU
    walking its tree for every record of its copy: a copy goes as fast as its slowest tree's
    mean path, §V-H) or an ideal machine (every record's path through every tree, spread over
    its ways). The record is read whole once (Booster broadcasts it to the BUs)."""
    lay = trace.layout
    n = lay.n_rows if rows is None else rows
    paths = np.asarray([float(np.dot(t.leaf_rows, t.leaf_depth)) / max(1, t.n_rows)
                        for t in trace.trees])
    k, b = record_layout(int(field_bytes(lay.n_bins, machine == "booster").sum()))
    mem = (n / k if b == 1 else n * b) * C.BLOCK_BYTES
    if machine == "booster":
        if trees * C.INFER_REPLICAS > C.INFER_BUS:
            copies = max(1, C.INFER_BUS // trees)
        else:
            copies = C.INFER_REPLICAS
        comp = n / copies * float(paths.max()) * C.CYCLES_PER_VERTEX / C.BOOSTER_HZ
    else:
        ways, hz = ((C.MULTICORE_WAYS, C.MULTICORE_HZ) if machine == "multicore"
                    else (C.GPU_WAYS, C.GPU_HZ))
        visits = n * float(paths.mean()) * trees
        comp = visits * C.IDEAL_CYCLES_PER_OP / (ways * hz)
    return float(max(mem / C.MEM_BYTES_PER_S, comp))


def energy(results):
    """SRAM and DRAM energy of each machine, normalised to the Ideal 32-core's, averaged over
    the data sets (Fig. 10): SRAM = accesses x Table V's energy per access, DRAM = bytes."""
    out = {"sram": {}, "dram": {}}
    for m in ("multicore", "gpu", "booster"):
        s = [r[m]["sram_accesses"] * C.E_SRAM[m]
             / (r["multicore"]["sram_accesses"] * C.E_SRAM["multicore"]) for r in results]
        dr = [r[m]["dram_bytes"] / r["multicore"]["dram_bytes"] for r in results]
        out["sram"][m] = float(np.mean(s))
        out["dram"][m] = float(np.mean(dr))
    return out


def simulate(trace, rows=None, trees=None, cfg=Config()):
    """Every machine's training time (and the Fig. 9 variants of Booster) for one trace."""
    res = {m: step_seconds(trace, m, cfg, rows, trees) for m in MACHINES}
    res["booster_no_opts"] = step_seconds(
        trace, "booster", replace(cfg, group_by_field=False, column_format=False), rows, trees)
    res["booster_group_by_field"] = step_seconds(
        trace, "booster", replace(cfg, group_by_field=True, column_format=False), rows, trees)
    base = res["multicore"]["total"]
    res["speedup"] = {m: (base / res[m]["total"] if res[m] is not None else None)
                      for m in ("gpu", "ir", "booster", "booster_no_opts",
                                "booster_group_by_field")}
    res["inference"] = {m: inference_seconds(trace, m, rows)
                        for m in ("multicore", "gpu", "booster")}
    res["inference"]["speedup"] = res["inference"]["multicore"] / res["inference"]["booster"]
    res["ir_copies"] = ir_copies(trace.layout.total_bins)
    return res
