#!/usr/bin/env bash
# Every GPU test and benchmark, for a session that is lent a GPU (issue 14; benchmarks/README.md
# "GPU"). Run from the repository root on the GPU machine, one or more stages a call:
#   bash benchmarks/gpu_session.sh setup probe tests profile train predict forest crossover
# Logs go to $OUT (the device tool's folder that comes back), else /tmp/gpu-logs.
# XGBoost, when it is not installed there, comes as a wheel unpacked into /tmp/site.
OUT=${OUT:-/tmp/gpu-logs}
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src:/tmp/site${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export NUMBA_CACHE_DIR=/tmp/hardwood-numba-cache
PY=${PY:-python3}
for stage in "$@"; do
  echo "=== $stage $(date -u +%T)"
  case $stage in
    setup)  # wheels in .whl (numpy for the image's numba-cuda), XGBoost as xz'd parts
      if ls .whl/*.whl >/dev/null 2>&1; then
        $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
          --target /tmp/site .whl/*.whl || exit 1
      fi
      for part in .xgb?/xgbpart-*; do [ -e "$part" ] && cp "$part" /tmp/; done
      if [ -e /tmp/xgbpart-ac ] && [ ! -d /tmp/site/xgboost ]; then
        cat /tmp/xgbpart-* | xz -d | tar x -C /tmp/site || exit 1
      fi ;;
    probe)
      nvidia-smi -L
      $PY -c "import numba, numba_cuda, numpy, sklearn; from numba import cuda; \
print('numba', numba.__version__, 'numba-cuda', numba_cuda.__version__, 'numpy', \
numpy.__version__, 'sklearn', sklearn.__version__); print(cuda.get_current_device().name, \
cuda.get_current_device().compute_capability)" 2>&1 | tee "$OUT/probe.log" ;;
    tests)
      $PY -m pytest -q -p no:cacheprovider -x tests/test_gpu_device.py \
        tests/test_boost_cuda.py::test_cuda_boosting_on_a_real_gpu \
        tests/test_forest_cuda.py::test_cuda_forest_kernels_compile_to_ptx 2>&1 \
        | tee "$OUT/tests.log" ;;
    profile)
      $PY benchmarks/gpu_profile_steps.py --rows 1000000 2>&1 | tee "$OUT/profile.log" ;;
    train)
      $PY benchmarks/gpu_train_vs_peers.py ${TRAIN_ARGS:-} 2>&1 | tee "$OUT/train.log" ;;
    predict)
      $PY benchmarks/gpu_predict_vs_peers.py 2>&1 | tee "$OUT/predict.log" ;;
    forest)
      $PY benchmarks/forest_vs_peers.py --device cuda --peers sklearn --threads 16 2>&1 \
        | tee "$OUT/forest.log" ;;
    crossover)
      $PY benchmarks/calibrate_forest_crossover.py --device cuda ${CROSSOVER_ARGS:---quick} \
        2>&1 | tee "$OUT/crossover.log" ;;
    *) echo "unknown stage $stage"; exit 2 ;;
  esac
done
