# What the recording benchmarks (record.sh, record_java.sh) share; sourced, with ROOT set to
# the repository.
#
# bench_setup NAME [-n RUNS] [WORKDIR]: sets RUNS (default 3), W (WORKDIR, default
# $ROOT/target/NAME; made, and made absolute) and RACEPRED (default
# $ROOT/target/release/racepred).
bench_setup() {
    local name=$1
    shift
    RUNS=3
    if [ "${1:-}" = "-n" ]; then
        RUNS=$2
        shift 2
    fi
    W=${1:-$ROOT/target/$name}
    mkdir -p "$W"
    W=$(cd "$W" && pwd)
    RACEPRED=${RACEPRED:-$ROOT/target/release/racepred}
}
