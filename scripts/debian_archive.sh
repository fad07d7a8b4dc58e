# Sourced by scripts that fetch from Debian: debian_archive prints the Debian archive this
# machine's apt uses (deb822 .sources, else one-line .list files), not its security archive.
debian_archive() {
  local uri
  uri=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' |
    grep -v -- '-security' | head -n 1)
  [[ -n $uri ]] || uri=$(grep -hsE '^deb[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list |
    sed -E 's/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?//' | awk '{print $1}' |
    grep -v -- '-security' | head -n 1)
  [[ -n $uri ]] || { echo "${0##*/}: no Debian archive in /etc/apt's sources" >&2; return 1; }
  echo "$uri"
}
