# fish completion for peer-sync
# Prints each line 'peer-sync ARGS' prints (VALUE, a tab, a description) for
# the store named on the line (--db PATH, --db=PATH), else its default store.
function __peer_sync_listing
    set --local words (commandline -opc)
    set --local db
    for i in (seq (count $words))
        switch $words[$i]
            case --db
                set db --db $words[(math $i + 1)]
            case '--db=*'
                set db --db (string replace -- --db= '' $words[$i])
        end
    end
    set -q db[2]; and set db[2] (string replace -r '^~(?=/|$)' -- $HOME $db[2])
    command peer-sync $argv $db 2>/dev/null </dev/null
end
# __peer_sync_argument_is FIRST N OPTION...: the word being completed is argument N (from 0; N+ for
# N or later) of the words from FIRST on, not counting options and the values of the OPTIONs named.
function __peer_sync_argument_is
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
complete -c peer-sync -f
complete -c peer-sync -n '__fish_use_subcommand' -a serve -d 'Accept peers, one session at a time'
complete -c peer-sync -n '__fish_use_subcommand' -a join -d 'Redeem a pairing offer and run a first sync'
complete -c peer-sync -n '__fish_use_subcommand' -a connect -d 'Sync once with a paired device'
complete -c peer-sync -n '__fish_use_subcommand' -a discover -d 'List the family\'s devices answering on the local network now'
complete -c peer-sync -n '__fish_use_subcommand' -a bundle -d 'Write what a device has not acknowledged yet to an encrypted file'
complete -c peer-sync -n '__fish_use_subcommand' -a unbundle -d 'Apply bundles another device wrote for this one'
complete -c peer-sync -n '__fish_use_subcommand' -a revoke -d 'Revoke a device from the family (owner only)'
complete -c peer-sync -n '__fish_use_subcommand' -a rename -d 'Name a device of the family (owner only)'
complete -c peer-sync -n '__fish_use_subcommand' -a status -d 'Show the family, its devices and sync state'
complete -c peer-sync -n '__fish_use_subcommand' -s h -l help -d 'Show help information and exit.'
complete -c peer-sync -n '__fish_use_subcommand' -l version -d 'Show the version and exit.'
complete -c peer-sync -n '__fish_seen_subcommand_from serve' -l db -r -F -d 'The store. It must exist: a missing one is status 66 (no store at PATH), never created.'
complete -c peer-sync -n '__fish_seen_subcommand_from serve' -l listen -x -d 'The address to listen on; port 0 picks a free port (see the \'listening\' event).'
complete -c peer-sync -n '__fish_seen_subcommand_from serve' -l once -d 'Exit after the first session (not after a refusal or a busy reply), with that session\'s status.'
complete -c peer-sync -n '__fish_seen_subcommand_from serve' -l no-advertise -d 'Do not announce this device with DNS-SD on the local network (it is never announced when listening on loopback).'
complete -c peer-sync -n '__fish_seen_subcommand_from serve' -l stdio -d 'Serve one session over standard input and output (for ssh, inetd and socket units) instead of listening; exits with that session\'s status (75 busy, 77 refused, 65 not a family-sync peer).'
complete -c peer-sync -n '__fish_seen_subcommand_from serve' -l wave-timeout -x -d 'Stop waiting for a wave of photo replies after this long without one; what is missing counts as unavailable and is asked for again next time.'
complete -c peer-sync -n '__fish_seen_subcommand_from serve' -l quiet-limit -x -d 'End a session in which nothing but keepalives has crossed, either way, for this long (a protocol error): a peer that does nothing holds no session.'
complete -c peer-sync -n '__fish_seen_subcommand_from serve' -l session-limit -x -d 'End a session that has run this long (a protocol error); what it applied stays, and the next session carries on with the rest.'
complete -c peer-sync -n '__fish_seen_subcommand_from serve' -l events -r -F -d 'Append progress events to PATH as NDJSON (one object per line, with \'event\' and \'time\'), for scripts.'
complete -c peer-sync -n '__fish_seen_subcommand_from serve' -l root -r -F -d 'Judge the proofs peers send against CERT (a DER or PEM file) instead of the bundled Apple Root CA - G3, as jws-verify --root does. Repeatable. Given to join, it is kept in the store (the setting trust_roots) and used by every later command on that store that gives no --root.'
complete -c peer-sync -n '__fish_seen_subcommand_from serve' -l now -x -d 'Use TIME (RFC 3339) as the current time, for tests and replays.'
complete -c peer-sync -n '__fish_seen_subcommand_from serve' -s q -l quiet -d 'Show no progress on standard error.'
complete -c peer-sync -n '__fish_seen_subcommand_from serve' -s h -l help -d 'Show help information and exit.'
complete -c peer-sync -n '__fish_seen_subcommand_from serve' -l version -d 'Show the version and exit.'
complete -c peer-sync -n '__fish_seen_subcommand_from join' -l db -r -F -d 'The store. A missing one is created, and standard error says so (created a new store at PATH).'
complete -c peer-sync -n '__fish_seen_subcommand_from join' -l connect -x -d 'Where the owner\'s device listens, when the offer carries no address or another one is right.'
complete -c peer-sync -n '__fish_seen_subcommand_from join' -l accept-new-owner-key -d 'Join again even when the owner\'s device does not prove the roster key this store holds (only when the family\'s owner really made a new one: otherwise the offer is forged).'
complete -c peer-sync -n '__fish_seen_subcommand_from join' -l name -x -d 'What to call this device ("Anna\'s phone"), at most 64 bytes, no control characters. The owner keeps it and shows it to the family; only the owner can rename it later (peer-sync rename).'
complete -c peer-sync -n '__fish_seen_subcommand_from join' -l wait -x -d 'Keep retrying a busy peer, with backoff, this long before giving up with status 75.'
complete -c peer-sync -n '__fish_seen_subcommand_from join' -l wave-timeout -x -d 'Stop waiting for a wave of photo replies after this long without one; what is missing counts as unavailable and is asked for again next time.'
complete -c peer-sync -n '__fish_seen_subcommand_from join' -l quiet-limit -x -d 'End a session in which nothing but keepalives has crossed, either way, for this long (a protocol error): a peer that does nothing holds no session.'
complete -c peer-sync -n '__fish_seen_subcommand_from join' -l session-limit -x -d 'End a session that has run this long (a protocol error); what it applied stays, and the next session carries on with the rest.'
complete -c peer-sync -n '__fish_seen_subcommand_from join' -l events -r -F -d 'Append progress events to PATH as NDJSON (one object per line, with \'event\' and \'time\'), for scripts.'
complete -c peer-sync -n '__fish_seen_subcommand_from join' -l root -r -F -d 'Judge the proofs peers send against CERT (a DER or PEM file) instead of the bundled Apple Root CA - G3, as jws-verify --root does. Repeatable. Given to join, it is kept in the store (the setting trust_roots) and used by every later command on that store that gives no --root.'
complete -c peer-sync -n '__fish_seen_subcommand_from join' -l now -x -d 'Use TIME (RFC 3339) as the current time, for tests and replays.'
complete -c peer-sync -n '__fish_seen_subcommand_from join' -s q -l quiet -d 'Show no progress on standard error.'
complete -c peer-sync -n '__fish_seen_subcommand_from join' -s h -l help -d 'Show help information and exit.'
complete -c peer-sync -n '__fish_seen_subcommand_from join' -l version -d 'Show the version and exit.'
complete -c peer-sync -n '__fish_seen_subcommand_from join' -F
complete -c peer-sync -n '__fish_seen_subcommand_from connect' -l db -r -F -d 'The store. It must exist: a missing one is status 66 (no store at PATH), never created.'
complete -c peer-sync -n '__fish_seen_subcommand_from connect' -l via -x -d 'Sync over COMMAND\'s standard input and output instead of TCP. COMMAND is split into words (with \'...\' and "..." quoting and backslash escapes) and run without a shell, as rsync -e runs one; its standard error is this tool\'s.'
complete -c peer-sync -n '__fish_seen_subcommand_from connect' -l wait -x -d 'Keep retrying a busy peer, with backoff, this long before giving up with status 75.'
complete -c peer-sync -n '__fish_seen_subcommand_from connect' -l wave-timeout -x -d 'Stop waiting for a wave of photo replies after this long without one; what is missing counts as unavailable and is asked for again next time.'
complete -c peer-sync -n '__fish_seen_subcommand_from connect' -l quiet-limit -x -d 'End a session in which nothing but keepalives has crossed, either way, for this long (a protocol error): a peer that does nothing holds no session.'
complete -c peer-sync -n '__fish_seen_subcommand_from connect' -l session-limit -x -d 'End a session that has run this long (a protocol error); what it applied stays, and the next session carries on with the rest.'
complete -c peer-sync -n '__fish_seen_subcommand_from connect' -l events -r -F -d 'Append progress events to PATH as NDJSON (one object per line, with \'event\' and \'time\'), for scripts.'
complete -c peer-sync -n '__fish_seen_subcommand_from connect' -l root -r -F -d 'Judge the proofs peers send against CERT (a DER or PEM file) instead of the bundled Apple Root CA - G3, as jws-verify --root does. Repeatable. Given to join, it is kept in the store (the setting trust_roots) and used by every later command on that store that gives no --root.'
complete -c peer-sync -n '__fish_seen_subcommand_from connect' -l now -x -d 'Use TIME (RFC 3339) as the current time, for tests and replays.'
complete -c peer-sync -n '__fish_seen_subcommand_from connect' -s q -l quiet -d 'Show no progress on standard error.'
complete -c peer-sync -n '__fish_seen_subcommand_from connect' -s h -l help -d 'Show help information and exit.'
complete -c peer-sync -n '__fish_seen_subcommand_from connect' -l version -d 'Show the version and exit.'
complete -c peer-sync -n '__fish_seen_subcommand_from discover' -l db -r -F -d 'The store. It must exist: a missing one is status 66 (no store at PATH), never created.'
complete -c peer-sync -n '__fish_seen_subcommand_from discover' -l timeout -x -d 'How long to browse.'
complete -c peer-sync -n '__fish_seen_subcommand_from discover' -l now -x -d 'Use TIME (RFC 3339) as the current time, for tests and replays.'
complete -c peer-sync -n '__fish_seen_subcommand_from discover' -s h -l help -d 'Show help information and exit.'
complete -c peer-sync -n '__fish_seen_subcommand_from discover' -l version -d 'Show the version and exit.'
complete -c peer-sync -n '__fish_seen_subcommand_from bundle' -l db -r -F -d 'The store. It must exist: a missing one is status 66 (no store at PATH), never created.'
complete -c peer-sync -n '__fish_seen_subcommand_from bundle' -l to -x -a '(__peer_sync_listing status --device-ids)' -d 'The device the bundle is for: its name, its ID, or a unique prefix of its ID (4 characters or more).'
complete -c peer-sync -n '__fish_seen_subcommand_from bundle' -s o -l output -r -F -d 'Where to write the bundle (a regular file; parts after the first go to PATH.2, PATH.3, ...).'
complete -c peer-sync -n '__fish_seen_subcommand_from bundle' -l max-bytes -x -d 'Cut the bundle into parts of at most about SIZE bytes each (a number, or with K, M or G for KiB, MiB, GiB; at least 4M).'
complete -c peer-sync -n '__fish_seen_subcommand_from bundle' -l root -r -F -d 'Judge the proofs peers send against CERT (a DER or PEM file) instead of the bundled Apple Root CA - G3, as jws-verify --root does. Repeatable. Given to join, it is kept in the store (the setting trust_roots) and used by every later command on that store that gives no --root.'
complete -c peer-sync -n '__fish_seen_subcommand_from bundle' -l now -x -d 'Use TIME (RFC 3339) as the current time, for tests and replays.'
complete -c peer-sync -n '__fish_seen_subcommand_from bundle' -s q -l quiet -d 'Show no progress on standard error.'
complete -c peer-sync -n '__fish_seen_subcommand_from bundle' -s h -l help -d 'Show help information and exit.'
complete -c peer-sync -n '__fish_seen_subcommand_from bundle' -l version -d 'Show the version and exit.'
complete -c peer-sync -n '__fish_seen_subcommand_from unbundle' -l db -r -F -d 'The store. It must exist: a missing one is status 66 (no store at PATH), never created.'
complete -c peer-sync -n '__fish_seen_subcommand_from unbundle' -l reply -r -F -d 'After applying, write a bundle back to the writer at PATH (every FILE must be from the same device).'
complete -c peer-sync -n '__fish_seen_subcommand_from unbundle' -l max-bytes -x -d 'With --reply: cut the reply into parts of at most about SIZE bytes (as bundle --max-bytes).'
complete -c peer-sync -n '__fish_seen_subcommand_from unbundle' -l root -r -F -d 'Judge the proofs peers send against CERT (a DER or PEM file) instead of the bundled Apple Root CA - G3, as jws-verify --root does. Repeatable. Given to join, it is kept in the store (the setting trust_roots) and used by every later command on that store that gives no --root.'
complete -c peer-sync -n '__fish_seen_subcommand_from unbundle' -l now -x -d 'Use TIME (RFC 3339) as the current time, for tests and replays.'
complete -c peer-sync -n '__fish_seen_subcommand_from unbundle' -s q -l quiet -d 'Show no progress on standard error.'
complete -c peer-sync -n '__fish_seen_subcommand_from unbundle' -s h -l help -d 'Show help information and exit.'
complete -c peer-sync -n '__fish_seen_subcommand_from unbundle' -l version -d 'Show the version and exit.'
complete -c peer-sync -n '__fish_seen_subcommand_from unbundle' -F
complete -c peer-sync -n '__fish_seen_subcommand_from revoke' -l db -r -F -d 'The store. It must exist: a missing one is status 66 (no store at PATH), never created.'
complete -c peer-sync -n '__fish_seen_subcommand_from revoke' -l now -x -d 'Use TIME (RFC 3339) as the current time, for tests and replays.'
complete -c peer-sync -n '__fish_seen_subcommand_from revoke' -s n -l dry-run -d 'Say which device DEVICE names (its ID and name) and change nothing.'
complete -c peer-sync -n '__fish_seen_subcommand_from revoke' -s h -l help -d 'Show help information and exit.'
complete -c peer-sync -n '__fish_seen_subcommand_from revoke' -l version -d 'Show the version and exit.'
complete -c peer-sync -n '__fish_seen_subcommand_from revoke' -f -a '(__peer_sync_listing status --device-ids)'
complete -c peer-sync -n '__fish_seen_subcommand_from rename' -l db -r -F -d 'The store. It must exist: a missing one is status 66 (no store at PATH), never created.'
complete -c peer-sync -n '__fish_seen_subcommand_from rename' -l now -x -d 'Use TIME (RFC 3339) as the current time, for tests and replays.'
complete -c peer-sync -n '__fish_seen_subcommand_from rename' -s h -l help -d 'Show help information and exit.'
complete -c peer-sync -n '__fish_seen_subcommand_from rename' -l version -d 'Show the version and exit.'
complete -c peer-sync -n '__fish_seen_subcommand_from rename; and __peer_sync_argument_is 3 0 --db --now' -f -a '(__peer_sync_listing status --device-ids)'
complete -c peer-sync -n '__fish_seen_subcommand_from status' -l db -r -F -d 'The store. It must exist: a missing one is status 66 (no store at PATH), never created.'
complete -c peer-sync -n '__fish_seen_subcommand_from status' -l root -r -F -d 'Judge the proofs peers send against CERT (a DER or PEM file) instead of the bundled Apple Root CA - G3, as jws-verify --root does. Repeatable. Given to join, it is kept in the store (the setting trust_roots) and used by every later command on that store that gives no --root.'
complete -c peer-sync -n '__fish_seen_subcommand_from status' -l now -x -d 'Use TIME (RFC 3339) as the current time, for tests and replays.'
complete -c peer-sync -n '__fish_seen_subcommand_from status' -l json -d 'Print the JSON object even on a terminal.'
complete -c peer-sync -n '__fish_seen_subcommand_from status' -l device-ids -d 'Print only the IDs of the devices revoke can name (the other devices not revoked), one per line, each followed by a tab and the device\'s name when it has one, and nothing else. The shell completions use it; a missing store is an error, never created.'
complete -c peer-sync -n '__fish_seen_subcommand_from status' -s h -l help -d 'Show help information and exit.'
complete -c peer-sync -n '__fish_seen_subcommand_from status' -l version -d 'Show the version and exit.'
