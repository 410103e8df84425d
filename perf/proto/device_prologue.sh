# Sourced by the session-10 device-call scripts: results go to $OUT (else $default_out), an empty tuning
# table for untuned runs, the start time, and pack(), which tars every result into $out/results.tar.gz
# (the device tool brings back only a few files per call; packing after each step keeps what a call cut
# short by its time limit had finished).
set -u
out=${OUT:-$default_out}
mkdir -p "$out"
start=$SECONDS
echo '{}' > "$out/no-tuning.json"
pack() { tar -czf "$out/results.tar.gz" -C "$out" --exclude results.tar.gz .; }
