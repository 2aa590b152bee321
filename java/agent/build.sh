#!/usr/bin/env bash
# Builds racepred's Java agent: build.sh [OUT.jar] (default: racepred-agent.jar here).
# Needs a JDK (javac, jar; 11 or later) and ASM 9 (Debian: apt-get install libasm-java, jars
# in /usr/share/java; another directory with $ASM_DIR). ASM is copied into the agent jar,
# so the jar is all `java -javaagent:` needs. Exit 77 when the JDK or ASM is missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/racepred-agent.jar}"
asm_dir="${ASM_DIR:-/usr/share/java}"
for tool in javac jar; do
    command -v "$tool" >/dev/null || { echo "build.sh: $tool not found (install a JDK)" >&2; exit 77; }
done
jars=()
for j in asm asm-commons asm-tree asm-analysis; do
    [ -f "$asm_dir/$j.jar" ] || { echo "build.sh: $asm_dir/$j.jar not found (apt-get install libasm-java, or set ASM_DIR)" >&2; exit 77; }
    jars+=("$asm_dir/$j.jar")
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/classes"
cp_asm="$(IFS=:; echo "${jars[*]}")"
javac -nowarn --release 11 -d "$work/classes" -cp "$cp_asm" "$here"/src/racepred/agent/*.java
(cd "$work/classes" && for j in "${jars[@]}"; do jar xf "$j"; done && rm -rf META-INF module-info.class)
printf 'Premain-Class: racepred.agent.Agent\nCan-Redefine-Classes: false\n' > "$work/manifest"
mkdir -p "$(dirname "$out")"
jar cfm "$work/agent.jar" "$work/manifest" -C "$work/classes" .
mv "$work/agent.jar" "$out"
