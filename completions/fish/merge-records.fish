# fish completion for merge-records
# __merge_records_argument_is FIRST N OPTION...: the word being completed is argument N (from 0; N+ for
# N or later) of the words from FIRST on, not counting options and the values of the OPTIONs named.
function __merge_records_argument_is
    set --local words (commandline -opc)
    set --local n 0
    set --local skip 0
    for w in $words[$argv[1]..-1]
        if test $skip -eq 1
            set skip 0
        else if contains -- $w $argv[3..-1]
            set skip 1
        else if not string match -q -- '-*' $w
            set n (math $n + 1)
        end
    end
    if string match -q -- '*+' $argv[2]
        test $n -ge (string trim -r -c + -- $argv[2])
    else
        test $n -eq $argv[2]
    end
end
complete -c merge-records -l db -r -F -d 'The store. Applying records (or --stamp, --add-photo) creates a missing one, and standard error says so (created a new store at PATH); --export and --backup need it to exist (status 66).'
complete -c merge-records -l stamp -d 'Store mode: the input holds edits made on this device. Each record gets deviceId = this device and modifiedAt = now (or 1 ms after the version held, when that is later), and, once the store is in a family, this device\'s authorship tag as its last field (any tag it came with is replaced); modifiedAt, deviceId and deleted may be absent, and a delete may be only {"id":ID,"deleted":true}. A record whose content equals the version held is unchanged (it keeps its modifiedAt and deviceId), so a stamp is safe to repeat. A record naming a photo the store does not hold is warned about on standard error.'
complete -c merge-records -l export -d 'Store mode: write the store\'s records as NDJSON to standard output, sorted by id in byte order, tombstones included.'
complete -c merge-records -l since -x -d 'With --export: only records changed after change number SEQ, oldest change first (the incremental form).'
complete -c merge-records -l cursor -r -F -d 'With --export: read SEQ from FILE (0 when FILE does not exist), export the changes after it, then replace FILE with the last change number written. Repeating the command exports only what changed since.'
complete -c merge-records -l id -x -d 'With --export: only the record ID. Repeatable.'
complete -c merge-records -l type -x -d 'With --export: only records of type TYPE. Repeatable.'
complete -c merge-records -l live -d 'With --export: only live records, no tombstones.'
complete -c merge-records -l deleted -d 'With --export: only tombstones.'
complete -c merge-records -l add-photo -r -F -d 'Store mode: keep the bytes of FILE, and of every FILE after it (--add-photo photos/*.jpg), in the store, named by their lowercase SHA-256 hex, and print {"file","sha256","size"} per file. Records name photos by that hash. All files go in one transaction.'
complete -c merge-records -l backup -r -F -d 'Store mode: write a consistent copy of the whole store to FILE and its photos to FILE-photos and FILE-photos-pack (new files, mode 0600), safe while peer-sync or another merge-records writes to the store; prints {"backup","photoFile","photoPack","bytes","records","photos","changeSeq"}.'
complete -c merge-records -l diff -d 'Why two devices disagree: merge-records --diff A B, each a store or an export, prints for every id whose versions differ one JSON line {"id","a","b","winner","rule"}: both versions (null where one has none), which a sync keeps (a, b, or null when each keeps its own) and by which rule. Exit 0 when they agree, 1 when they differ.'
complete -c merge-records -l explain -d 'Write, per id, which rule decided as one JSON line on standard error.'
complete -c merge-records -l explain-file -r -F -d 'Write the --explain lines to PATH instead of standard error.'
complete -c merge-records -l now -x -d 'Use TIME (RFC 3339) as the current time, for tests and replays.'
complete -c merge-records -s q -l quiet -d 'Show no progress on standard error.'
complete -c merge-records -s h -l help -d 'Show help information and exit.'
complete -c merge-records -l version -d 'Show the version and exit.'
complete -c merge-records -n '__merge_records_argument_is 2 0 --db --since --cursor --id --type --add-photo --backup --explain-file --now' -F
complete -c merge-records -n '__merge_records_argument_is 2 1 --db --since --cursor --id --type --add-photo --backup --explain-file --now' -F
