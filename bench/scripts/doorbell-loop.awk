# loop_of(p): the longest run of doorbells of pid p with no other write() in between, as LO..HI.
# Shared by round-trip-split-table.sh and round-trip-tail.sh (N[p] doorbells of pid p; BRK[p, i]
# marks a break after doorbell i).
function loop_of(p,   i, s) {
    LO = 1; HI = 0; s = 1
    for (i = 1; i <= N[p]; i++)
        if ((p, i) in BRK || i == N[p]) { if (i - s > HI - LO) { LO = s; HI = i }; s = i + 1 }
}
