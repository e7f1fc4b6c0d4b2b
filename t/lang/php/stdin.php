<?php
echo stream_get_contents(STDIN);
