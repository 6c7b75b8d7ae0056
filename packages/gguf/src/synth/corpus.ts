// A small English text, written for this package, that the synthetic tokenizers are trained
// on. It only needs to be varied, plain English so that a BPE pass turns the common words
// ("the", " quick", " brown", " model", ...) into single tokens and generated text reads as
// words rather than byte soup. Changing it changes every synthetic model's vocabulary.

export const CORPUS = `The quick brown fox jumps over the lazy dog. The dog does not move, and the fox runs on into the green field behind the old barn.
A small model can still tell a story. It reads one word at a time, looks back at what came before, and picks the next word from what it has learned.
When the morning light came through the window, the house was quiet. Nobody had woken up yet, so the cat walked slowly across the kitchen table and sat down next to the bread.
We measured the time it took to read each part of the file from the disk. Some parts were read many times, while others were read only once, and a few were never needed at all.
There are many ways to build a machine that answers questions. Most of them start with a large set of numbers, a few simple rules, and a great deal of patience.
She opened the door, looked at the long road ahead of her, and decided to walk instead of waiting for the bus. The weather was cold but the sky was clear and bright.
The children played in the garden until it was time for dinner. Their mother called them twice, and the second time they came running with dirty hands and happy faces.
In the city there is a small shop that sells books, maps and old letters. The owner knows every book by heart and will tell you which one you should read next.
Water flows down the hill and into the river, and the river carries it all the way to the sea. Along the way it passes farms, towns, bridges and quiet forests.
Good tools make hard work easier. A sharp knife, a strong rope, or a clear plan can save hours of effort and keep people safe when things go wrong.
The teacher wrote a question on the board and asked the class to think about it for a minute before anyone spoke. Then one student raised her hand and gave a careful answer.
Every system has limits. Memory runs out, time runs short, and the network is never as fast as we hope. A good design knows its limits and works well inside them.
He wanted to learn how to cook, so he started with simple things: eggs, rice, soup and bread. After a few weeks he could make a meal that his friends were glad to eat.
The train left the station at seven in the evening. Most of the people on board were going home after work, reading, sleeping, or looking out at the passing lights.
If you want to understand a problem, try to explain it to someone else. Often the act of putting it into words shows you which part you did not really understand.
The old man planted a tree that he knew he would never see grow tall. He did it for his grandchildren, and for the birds that would one day build their nests in it.
Numbers like one, two, three, ten, twenty and one hundred appear in almost every text. So do words like first, second, last, more, less, many, few, all and none.
The meeting started late because the room was still being used. When it finally began, the group agreed on three goals and a date for the next meeting.
A river of data moves through the machine. Each layer takes what it receives, changes it a little, and passes it on, until the last layer makes a choice.
Some experts are called often and some are called rarely. The router decides which experts should help with each word, and only those experts do any work for it.
She kept a small notebook in her pocket and wrote down every idea she had during the day. At night she read the notes again and kept only the best ones.
The rain stopped just before noon. People came out of the shops and cafes, the streets filled with noise again, and the smell of wet stone hung in the air.
It is better to be clear than clever. A short sentence that says exactly what you mean is worth more than a long one that leaves the reader guessing.
They built the bridge in two years, working through the summer heat and the winter snow. When it opened, the whole town came to walk across it together.
What do you think will happen next? Will the story end well, or will there be another turn? Nobody knows yet, and that is part of the fun.
The computer was old and slow, but it still worked. Every morning it took a few minutes to start, and every evening it made a soft sound as it shut down.
Light travels very fast, sound travels much slower, and a letter sent by post travels slowest of all. Still, a letter can carry words that last for years.
Thank you for reading this far. Please let us know if something is wrong, and we will do our best to fix it as soon as we can.
`;
