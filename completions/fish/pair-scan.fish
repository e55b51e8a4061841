# fish completion for pair-scan
complete -c pair-scan -l raw -d 'Print the text of every QR code found, one per line, instead of the offer JSON.'
complete -c pair-scan -l now -x -d 'Use TIME (RFC 3339) as the current time, for tests and replays.'
complete -c pair-scan -s q -l quiet -d 'Show no progress on standard error.'
complete -c pair-scan -s h -l help -d 'Show help information and exit.'
complete -c pair-scan -l version -d 'Show the version and exit.'
