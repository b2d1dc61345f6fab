#!/usr/bin/env bash
# Fails early, with a clear message, when no Java 17+ runtime is available for the embedded
# Spark and Flink (PySpark 4.x and PyFlink 2.3 need Java 17+). Run before any engine job or test.
set -euo pipefail
hint="install one, e.g. 'sudo apt-get install openjdk-17-jre-headless' (Debian/Ubuntu) or
'brew install openjdk@17' (macOS), or point JAVA_HOME at an existing JDK/JRE 17+"
if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then
  java="$JAVA_HOME/bin/java"
elif command -v java >/dev/null 2>&1; then
  java="$(command -v java)"
else
  echo "swag: Spark and Flink need Java 17+, but no 'java' was found (JAVA_HOME unset, none on PATH);" >&2
  echo "$hint" >&2
  exit 1
fi
# 'java -version' prints e.g.: openjdk version "17.0.15" 2025-04-15   or   java version "1.8.0_392"
line="$("$java" -version 2>&1 | grep -m1 -i 'version' || true)"
ver="$(printf '%s' "$line" | sed -n 's/.*version "\([^"]*\)".*/\1/p')"
case "$ver" in
  1.*) major="$(printf '%s' "$ver" | cut -d. -f2)" ;;
  *)   major="$(printf '%s' "$ver" | cut -d. -f1 | cut -d- -f1 | cut -d+ -f1)" ;;
esac
if ! [[ "$major" =~ ^[0-9]+$ ]]; then
  echo "swag: could not read the Java version from '$java -version' (got: '$line');" >&2
  echo "Spark and Flink need Java 17+: $hint" >&2
  exit 1
fi
if [ "$major" -lt 17 ]; then
  echo "swag: Spark and Flink need Java 17+, but $java is Java $major ($ver);" >&2
  echo "$hint" >&2
  exit 1
fi
