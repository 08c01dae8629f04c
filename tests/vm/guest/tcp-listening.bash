# tcp_listening PORT: true when a TCP socket on PORT is in LISTEN state (0A), IPv4 or IPv6.
# Reads /proc/net/tcp{,6} only, so it works in the bare image (no ss/netstat). Sourced by the
# cases' lib.sh and by bench/scripts/side-by-side-guest.sh (each copied next to it). Named
# .bash, not .sh, because the suite runs every cases/*.sh as a case.
tcp_listening() {
    local hex sl local rem st rest f
    printf -v hex ':%04X' "$1"
    for f in /proc/net/tcp /proc/net/tcp6; do
        [ -r "$f" ] || continue
        while read -r sl local rem st rest; do
            [ "$st" = 0A ] && [ "${local: -5}" = "$hex" ] && return 0
        done <"$f"
    done
    return 1
}
