: "${boom:?boom is not set}"
echo unreachable
