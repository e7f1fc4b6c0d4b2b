s=xxxxxxxxxxxxxxxx
while :; do s=$s$s; done
