print $stdin.read
