# fish completion for pair-qr
complete -c pair-qr -l db -r -F -d 'The store. Created on first use.'
complete -c pair-qr -l now -x -d 'Use TIME (RFC 3339) as the current time, for tests and replays.'
complete -c pair-qr -s q -l quiet -d 'Show no progress on standard error.'
complete -c pair-qr -s h -l help -d 'Show help information and exit.'
complete -c pair-qr -l version -d 'Show the version and exit.'
