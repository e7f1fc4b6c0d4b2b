const greeting: string = "hello";
console.log(greeting);
