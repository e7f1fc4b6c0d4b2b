<?php
$keep = [];
while (true) {
    $keep[] = str_repeat("x", 1 << 20);
}
