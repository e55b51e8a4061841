# fish completion for peer-sync
complete -c peer-sync -l db -r -F -d 'The store. Created on first use.'
complete -c peer-sync -l now -x -d 'Use TIME (RFC 3339) as the current time, for tests and replays.'
complete -c peer-sync -s q -l quiet -d 'Show no progress on standard error.'
complete -c peer-sync -s h -l help -d 'Show help information and exit.'
complete -c peer-sync -l version -d 'Show the version and exit.'
