"""Every constant of the Booster performance model, in one table, each with its source.

Sources are sections, tables and figures of He, Vijaykumar, Thottethodi, *Booster: An
Accelerator for Gradient Boosting Decision Trees* (the paper). ``source`` says "assumption"
where the paper is silent, and ``note`` says what was assumed and why. No constant is fitted
to the paper's results: each is read from the paper's text or assumed before any result was
looked at. ``CONSTANTS`` is the table; the module-level names are its values.
"""
from __future__ import annotations

from typing import NamedTuple


class Constant(NamedTuple):
    name: str
    value: float
    unit: str
    source: str
    note: str = ""


CONSTANTS = (
    # -- Booster ----------------------------------------------------------------------------
    Constant("BU_COUNT", 3200, "BUs", "§III-B, §V-G, Table V",
             "Booster Units (an SRAM and an FP adder each)"),
    Constant("CLUSTERS", 50, "clusters", "§V-G", "50 clusters of 64 BUs"),
    Constant("BUS_PER_CLUSTER", 64, "BUs", "§III-B, §V-G",
             "one 64-byte block of one-byte fields feeds one cluster's BUs one to one"),
    Constant("SRAM_BYTES", 2048, "B", "Table V, §III-C(4)", "2 KB per BU"),
    Constant("BIN_BYTES", 8, "B", "§III-C(4)",
             "a float field's 256 bins fill 2 KB, so 8 B per bin (G and H, float32)"),
    Constant("BOOSTER_HZ", 1e9, "Hz", "§III-B, Table V, §V-G", "1-GHz clock"),
    Constant("CYCLES_PER_FIELD_UPDATE", 8, "cycles", "§III-B",
             "subtract, SRAM read, two pipelined FP adds, SRAM write: 'say 8 cycles'"),
    Constant("CYCLES_PER_PREDICATE", 8, "cycles", "assumption",
             "③ on a BU: read the field, compare, write the pointer to a buffer; taken as one "
             "field update's 8 cycles (the paper models it from RTL and finds it hidden under "
             "memory, §IV)"),
    Constant("CYCLES_PER_VERTEX", 8, "cycles", "assumption",
             "⑤ and inference: one vertex of the tree table looked up in the SRAM and its "
             "predicate evaluated; taken as one field update's 8 cycles"),
    Constant("FIELD_BYTES", 1, "B", "§III-B",
             "'each field consumes a byte to specify its feature'; a field spread over s "
             "SRAMs repeats its bin s times (§III-C(3))"),
    Constant("BLOCK_BYTES", 64, "B", "§III-B", "memory block"),
    Constant("MEM_BYTES_PER_S", 400e9, "B/s", "§III-B, §IV, Table IV",
             "sustained bandwidth of the 24-channel memory, shared by every machine (§IV)"),
    Constant("POINTER_BYTES", 4, "B", "assumption",
             "a record pointer in ①/③'s streams (32 bits address 4 G records); paper silent"),
    Constant("GH_BYTES", 8, "B", "assumption",
             "a record's g and h, float32 each, stored apart from the records (§III-B); "
             "paper silent on their width"),
    Constant("HOST_CORES", 32, "cores", "§IV, Table V",
             "② and the reduction at the end of ① run on the host, a real 32-core "
             "multicore (2.2 GHz)"),
    Constant("HOST_HZ", 2.2e9, "Hz", "Table V", ""),
    Constant("HOST_CYCLES_PER_ADD", 1, "cycles", "assumption",
             "the reduction of histogram copies: one add per bin channel per copy per "
             "cycle per core, perfectly parallel (paper silent)"),
    # -- ideal machines -----------------------------------------------------------------------
    Constant("MULTICORE_WAYS", 32, "ways", "§IV, Table V",
             "Ideal 32-core: 'constrained only by 32-way parallelism'"),
    Constant("MULTICORE_HZ", 2.2e9, "Hz", "Table V", ""),
    Constant("GPU_WAYS", 64, "ways", "§IV, §II-D, Table V",
             "Ideal GPU: 64 SMs, one warp each (a private histogram fills the Shared "
             "Memory, §II-D): 'constrained only by 64-way parallelism'"),
    Constant("GPU_HZ", 2.2e9, "Hz", "Table V", ""),
    Constant("IDEAL_CYCLES_PER_OP", 8, "cycles", "assumption",
             "the ideal machines do the same work per field update, predicate and vertex as "
             "a BU (§III-B's 8 cycles): 'without any implementation artifacts' (§IV), they "
             "differ from Booster only in parallelism and clock. The speedups scale with "
             "this constant; the README shows the model at 1 cycle too"),
    # -- inter-record design (§V-A) -----------------------------------------------------------
    Constant("IR_HZ", 1e9, "Hz", "§IV", "the same clock as Booster"),
    Constant("IR_SRAM_BYTES", 6.4e6 * 1.7 * (33.1 + 18.4) / 33.1, "B", "§V-A, §V-G, Table VI",
             "the same area as Booster: its SRAM (33.1 mm²) and FPU (18.4 mm²) area spent on "
             "one-bank SRAM, which is ~1.7x denser than 3200 banks (§V-G): 6.4 MB x 1.7 x "
             "51.5/33.1 = 16.9 MB; copies = floor(this / histogram bytes). Gives 295 copies "
             "for a 28x256-bin Higgs (paper: 271) and 179 for Mq2008's 46 fields (paper: 179). The "
             "paper does not give its rule; this reading was chosen because it reproduces "
             "those two stated copy counts (an input of §V-A, not a result)"),
    # -- energy (normalised per SRAM access, Table V; DRAM by bytes moved, §IV) ---------------
    Constant("E_SRAM_MULTICORE", 1.0, "norm.", "Table V", "32-KB L1D per access"),
    Constant("E_SRAM_GPU", 2.64, "norm.", "Table V", "96-KB banked Shared Memory per access"),
    Constant("E_SRAM_BOOSTER", 0.71, "norm.", "Table V", "2-KB SRAM per access"),
    Constant("E_DRAM_PER_BYTE", 1.0, "norm.", "§IV", "DRAM energy follows transfer activity"),
    # -- batch inference (§V-H) ---------------------------------------------------------------
    Constant("INFER_TREES", 500, "trees", "§V-H", ""),
    Constant("INFER_REPLICAS", 6, "replicas", "§V-H", "6 copies of the 500 trees in 3,000 BUs"),
    Constant("INFER_BUS", 3000, "BUs", "§V-H", "one tree per BU"),
    # -- the paper's experiment -----------------------------------------------------------------
    Constant("PAPER_TREES", 500, "trees", "§IV", "500 trees of depth up to 6"),
    Constant("PAPER_DEPTH", 6, "levels", "§IV", ""),
    Constant("SCALE_UP", 10, "x", "§V-F", "datasets replicated 10 times"),
)

_BY_NAME = {c.name: c for c in CONSTANTS}


def value(name):
    return _BY_NAME[name].value


BU_COUNT = int(value("BU_COUNT"))
CLUSTERS = int(value("CLUSTERS"))
BUS_PER_CLUSTER = int(value("BUS_PER_CLUSTER"))
SRAM_BYTES = int(value("SRAM_BYTES"))
BIN_BYTES = int(value("BIN_BYTES"))
SRAM_BINS = SRAM_BYTES // BIN_BYTES  # 256
BOOSTER_HZ = value("BOOSTER_HZ")
CYCLES_PER_FIELD_UPDATE = value("CYCLES_PER_FIELD_UPDATE")
CYCLES_PER_PREDICATE = value("CYCLES_PER_PREDICATE")
CYCLES_PER_VERTEX = value("CYCLES_PER_VERTEX")
FIELD_BYTES = int(value("FIELD_BYTES"))
BLOCK_BYTES = int(value("BLOCK_BYTES"))
MEM_BYTES_PER_S = value("MEM_BYTES_PER_S")
POINTER_BYTES = int(value("POINTER_BYTES"))
GH_BYTES = int(value("GH_BYTES"))
HOST_CORES = int(value("HOST_CORES"))
HOST_HZ = value("HOST_HZ")
HOST_CYCLES_PER_ADD = value("HOST_CYCLES_PER_ADD")
MULTICORE_WAYS = int(value("MULTICORE_WAYS"))
MULTICORE_HZ = value("MULTICORE_HZ")
GPU_WAYS = int(value("GPU_WAYS"))
GPU_HZ = value("GPU_HZ")
IDEAL_CYCLES_PER_OP = value("IDEAL_CYCLES_PER_OP")
IR_HZ = value("IR_HZ")
IR_SRAM_BYTES = value("IR_SRAM_BYTES")
E_SRAM = {"multicore": value("E_SRAM_MULTICORE"), "gpu": value("E_SRAM_GPU"),
          "booster": value("E_SRAM_BOOSTER")}
E_DRAM_PER_BYTE = value("E_DRAM_PER_BYTE")
INFER_TREES = int(value("INFER_TREES"))
INFER_REPLICAS = int(value("INFER_REPLICAS"))
INFER_BUS = int(value("INFER_BUS"))
PAPER_TREES = int(value("PAPER_TREES"))
PAPER_DEPTH = int(value("PAPER_DEPTH"))
SCALE_UP = int(value("SCALE_UP"))


def table_markdown():
    """The table as Markdown (the README and ``hardwood simulate --constants`` print it)."""
    lines = ["| constant | value | unit | source | note |", "|---|---|---|---|---|"]
    for c in CONSTANTS:
        v = f"{c.value:g}" if isinstance(c.value, float) else str(c.value)
        lines.append(f"| {c.name} | {v} | {c.unit} | {c.source} | {c.note} |")
    return "\n".join(lines)
