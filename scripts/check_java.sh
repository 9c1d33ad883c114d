#!/usr/bin/env bash
# Fail fast, with a clear message, when no Java 17+ runtime is available for Spark.
# Looks at $JAVA_HOME/bin/java first (what Spark uses), then `java` on PATH.
set -euo pipefail

required_major=17

if [[ -n "${JAVA_HOME:-}" && -x "${JAVA_HOME}/bin/java" ]]; then
  java_bin="${JAVA_HOME}/bin/java"
elif command -v java >/dev/null 2>&1; then
  java_bin="$(command -v java)"
else
  printf '%s\n' \
    "ERROR: Java is not installed, and LakeLogic runs on Apache Spark, which needs Java ${required_major}+." \
    "  Debian/Ubuntu: sudo apt-get install -y openjdk-17-jre-headless" \
    "  macOS:         brew install openjdk@17" \
    "  or install any JDK ${required_major}+ and set JAVA_HOME to it." >&2
  exit 1
fi

# `java -version` prints e.g. 'openjdk version "17.0.15" 2025-04-15' or 'java version "1.8.0_392"' on stderr.
version_line="$("${java_bin}" -version 2>&1 | head -n 1)"
version="$(sed -E 's/^[^"]*"([^"]+)".*$/\1/' <<<"${version_line}")"
major="${version%%.*}"
if [[ "${major}" == "1" ]]; then
  # Java 8 and older report 1.x
  major="$(cut -d. -f2 <<<"${version}")"
fi
if ! [[ "${major}" =~ ^[0-9]+$ ]]; then
  echo "ERROR: could not read the Java version from '${java_bin} -version': ${version_line}" >&2
  exit 1
fi
if (( major < required_major )); then
  printf '%s\n' \
    "ERROR: ${java_bin} is Java ${major}; Spark 3.5 in LakeLogic needs Java ${required_major} or newer." \
    "  Install OpenJDK ${required_major} and put it first on PATH, or set JAVA_HOME to it." >&2
  exit 1
fi
echo "java ${version} (${java_bin}) ok"
