puts "hello"
