#!/usr/bin/env bash
# Fills hack/cluster/bin with the control plane's binaries from a per-user
# cache, as Go keeps its build cache: a fresh clone reuses what another clone
# built. build.sh runs only when the cache has no entry for the key.
# The Makefile's cluster-bin calls it when bin/.stamp is older than its inputs.
#
# Usage: cluster-bin.sh          reuse the entry for the key, or build and publish it
#        cluster-bin.sh key      print the key
#        cluster-bin.sh dir      print the entry's directory (complete or not)
#        cluster-bin.sh clean    remove every entry, of every key (make clean-cluster-cache)
#
# The cache is $CLUSTER_BIN_CACHE, by default
# ${XDG_CACHE_HOME:-$HOME/.cache}/tmplop-operator/cluster-bin, one directory
# per key, <Kubernetes version>-<hash>, about 450 MB each. The hash covers
# exactly what determines the binaries: go.mod, go.sum, kwok/go.mod,
# kwok/go.sum, scripts/build.sh, scripts/stages.sh, every file under cmd/, and
# the Go toolchain and target (go version, go env GOOS GOARCH ...) of both
# modules. Entries of older keys are left alone. CLUSTER_BIN_CACHE=off builds
# straight into bin/ as before.
#
# An entry is built in a temporary directory of the cache (.tmp-*), gets its
# marker (the list of its files and their sizes) last, and is then published
# by one rename: an interrupted build never leaves an entry that looks
# complete. Two builds of one key each build in a directory of their own; the
# second rename fails and that build uses the first one's entry.
# The files of bin/ are hard links into the entry (copies when the cache is on
# another file system), read-only: replace them, never write into them.
set -euo pipefail
shopt -s inherit_errexit

here=$(cd "$(dirname "$0")/.." && pwd)
bin="$here/bin"
marker=.cluster-bin-complete
if [ -n "${CLUSTER_BIN_CACHE:-}" ]; then
  cache=$CLUSTER_BIN_CACHE
elif [ -n "${XDG_CACHE_HOME:-}" ]; then
  cache=$XDG_CACHE_HOME/tmplop-operator/cluster-bin
elif [ -n "${HOME:-}" ]; then
  cache=$HOME/.cache/tmplop-operator/cluster-bin
else
  echo "cluster-bin: neither CLUSTER_BIN_CACHE, XDG_CACHE_HOME nor HOME is set: no cache" >&2
  cache=off
fi

# key: <k8s version>-<first 24 hex digits of a sha256 of the inputs>.
key() {
  local k8s d
  k8s=$(awk '$1 == "k8s.io/kubernetes" {print $2; exit}' "$here/go.mod")
  {
    cd "$here"
    sha256sum go.mod go.sum kwok/go.mod kwok/go.sum scripts/build.sh scripts/stages.sh
    find cmd -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
    for d in . kwok; do # each module may select a toolchain of its own
      echo "module $d"
      (cd "$d" && go version && go env GOVERSION GOOS GOARCH GOAMD64 GOARM GOARM64 GO386 \
        GOPPC64 GORISCV64 GOMIPS GOMIPS64 GOWASM GOEXPERIMENT GOFIPS140 GOFLAGS)
    done
  } | sha256sum | cut -c1-24 | sed "s/^/${k8s:-unknown}-/"
}

# complete DIR: DIR is a published entry with every file of its marker.
complete() {
  local dir=$1 size name
  [ -f "$dir/$marker" ] || return 1
  while read -r size name; do
    [ -f "$dir/$name" ] && [ "$(stat -c %s "$dir/$name")" = "$size" ] || return 1
  done < "$dir/$marker"
}

# link DIR: each file of DIR into bin/, replaced by a rename (a running
# binary keeps its old file). A file that already is the entry's (the same
# inode: linked before, or by a concurrent run) is left as it is.
link() {
  local src=$1 f name new
  mkdir -p "$bin"
  for f in "$src"/*; do
    name=${f##*/}
    [ "$f" -ef "$bin/$name" ] && continue
    new="$bin/.$name.new.$$"
    rm -f "$new"
    ln "$f" "$new" 2>/dev/null || cp -p "$f" "$new"
    if ! mv -f "$new" "$bin/$name" 2>/dev/null; then
      [ "$new" -ef "$bin/$name" ] || { echo "cluster-bin: cannot write $bin/$name" >&2; rm -f "$new"; return 1; }
      rm -f "$new"
    fi
  done
}

case "${1:-}" in
  key) key; exit ;;
  dir) echo "$cache/$(key)"; exit ;;
  clean)
    if [ "$cache" = off ] || [ ! -d "$cache" ]; then echo "cluster-bin: no cache at $cache"; exit 0; fi
    # Only what this script made: entries with a marker and temporary
    # directories, so that a CLUSTER_BIN_CACHE pointing elsewhere loses nothing.
    shopt -s nullglob dotglob
    n=0
    for d in "$cache"/*/; do
      d=${d%/}
      if [ -f "$d/$marker" ] || [[ ${d##*/} == .tmp-* || ${d##*/} == .old-* ]]; then
        echo "cluster-bin: removing $d ($(du -sh "$d" | cut -f1))"
        rm -rf "$d"
        n=$((n + 1))
      fi
    done
    rmdir "$cache" 2>/dev/null || true
    echo "cluster-bin: removed $n entries of $cache (hack/cluster/bin of each clone keeps its files)"
    exit ;;
  "") ;;
  *) echo "usage: $0 [key|dir|clean]" >&2; exit 2 ;;
esac

if [ "$cache" = off ]; then
  echo "cluster-bin: no cache (CLUSTER_BIN_CACHE=off): building into $bin"
  bash "$here/scripts/build.sh" "$bin"
  exit
fi

key=$(key)
entry="$cache/$key"
if complete "$entry"; then
  link "$entry"
  echo "cluster-bin: reusing $entry"
  exit
fi

mkdir -p "$cache"
# Leftovers: builds killed more than a day ago, and an entry without its
# marker (a copy made by hand, say), which the rename below cannot replace.
find "$cache" -mindepth 1 -maxdepth 1 \( -name '.tmp-*' -o -name '.old-*' \) -mmin +1440 -exec rm -rf {} +
if [ -e "$entry" ] && ! complete "$entry"; then
  echo "cluster-bin: $entry is incomplete: setting it aside"
  old=$(mktemp -d "$cache/.old-$key.XXXXXX")
  mv -T "$entry" "$old/entry" 2>/dev/null || true
  rm -rf "$old"
fi

echo "cluster-bin: no entry for $key in $cache: building (several minutes)"
tmp=$(mktemp -d "$cache/.tmp-$key.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
bash "$here/scripts/build.sh" "$tmp"
chmod a-w "$tmp"/*
(cd "$tmp" && for f in *; do echo "$(stat -c %s "$f") $f"; done) > "$tmp/.marker.new"
mv "$tmp/.marker.new" "$tmp/$marker"
chmod 755 "$tmp"
if mv -T "$tmp" "$entry" 2>/dev/null; then
  trap - EXIT
  echo "cluster-bin: built and published $entry ($(du -sh "$entry" | cut -f1); older keys are left alone: make clean-cluster-cache)"
elif complete "$entry"; then
  echo "cluster-bin: another build published $entry first: using it"
else
  echo "cluster-bin: could not publish $tmp as $entry" >&2
  exit 1
fi
link "$entry"
