"""A tree as flat arrays indexed by node id, root at 0 (the Tree contract of DESIGN.md)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TREE_FIELDS = {
    "feature": np.int32,
    "threshold": np.float64,
    "left": np.int32,
    "right": np.int32,
    "default_left": np.bool_,
    "is_categorical": np.bool_,
    "cat_offset": np.int64,
    "value": np.float64,
    "gain": np.float32,
    "cover": np.float64,
    "count": np.int64,
}


_EDITS = [0]  # attributes of a built Tree assigned anew, in all trees (Tree.__setattr__)


def tree_edits() -> int:
    """How many times an array of a built tree was replaced (``tree.value = ...``): the model
    caches are keyed by it, so that none serves the arrays from before."""
    return _EDITS[0]


@dataclass
class Tree:
    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    default_left: np.ndarray
    is_categorical: np.ndarray
    cat_offset: np.ndarray  # into cat_bitsets (uint32 words); -1 for non-categorical nodes
    value: np.ndarray
    gain: np.ndarray
    cover: np.ndarray
    count: np.ndarray
    cat_bitsets: np.ndarray  # uint32, this tree's bitsets

    def __setattr__(self, name, value):
        if "cat_bitsets" in self.__dict__:  # built (the dataclass sets cat_bitsets last)
            _EDITS[0] += 1
        object.__setattr__(self, name, value)

    def freeze(self):
        """Make the arrays read-only: a model that packed them for prediction (``Model``'s
        caches) would not see them changed in place. Assign new arrays instead."""
        for k in (*TREE_FIELDS, "cat_bitsets"):
            getattr(self, k).flags.writeable = False

    @property
    def n_nodes(self) -> int:
        return int(self.feature.shape[0])

    @property
    def n_leaves(self) -> int:
        return int(np.count_nonzero(self.feature < 0))

    def node_depths(self) -> np.ndarray:
        """Each node's depth (the root's is 0)."""
        depth = np.zeros(self.n_nodes, dtype=np.int64)
        for i in range(self.n_nodes):
            if self.feature[i] >= 0:
                depth[self.left[i]] = depth[i] + 1
                depth[self.right[i]] = depth[i] + 1
        return depth

    def depth(self) -> int:
        return int(self.node_depths().max()) if self.n_nodes else 0

    def to_dict(self):
        d = {k: getattr(self, k).tolist() for k in TREE_FIELDS}
        d["cat_bitsets"] = self.cat_bitsets.tolist()
        return d

    @classmethod
    def from_arrays(cls, **arrays):
        kw = {k: np.ascontiguousarray(arrays[k], dtype=t) for k, t in TREE_FIELDS.items()}
        kw["cat_bitsets"] = np.ascontiguousarray(arrays.get("cat_bitsets", []), dtype=np.uint32)
        return cls(**kw)


def bitset_from_mask(mask: np.ndarray) -> np.ndarray:
    """uint32 words with bit ``c`` set where ``mask[c]``."""
    n_words = max(1, (mask.shape[0] + 31) // 32)
    packed = np.zeros(4 * n_words, dtype=np.uint8)
    bits = np.packbits(np.asarray(mask, dtype=bool), bitorder="little")
    packed[:bits.size] = bits
    return packed.view("<u4").astype(np.uint32)


def mask_from_bitset(words: np.ndarray, n: int) -> np.ndarray:
    idx = np.arange(n)
    return ((words[idx >> 5] >> (idx & 31).astype(np.uint32)) & 1).astype(bool)


@dataclass
class BinnedTree:
    """The same tree over bins, used during training (step ⑤ and validation sets):
    at internal node ``i`` a row goes left when ``table[table_offset[i] + bin]``."""

    feature: np.ndarray  # int64, -1 leaf
    table_offset: np.ndarray  # int64
    table: np.ndarray  # uint8
    left: np.ndarray  # int64
    right: np.ndarray
    value: np.ndarray  # float64
